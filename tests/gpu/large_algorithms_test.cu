// Past 2^31 elements, the algorithms that large_test.cu leaves out: unique and unique_copy,
// copy_if and remove_if with more than 2^31 survivors, reduce_by_key, sort and stable_sort
// (radix and merge sort), stable_sort_by_key, and gather. Each runs on one slot (one piece
// longer than any 32-bit count: CUB's 64-bit paths) and on three slots of GPU 0 (global
// offsets past 2^31, runs and requests that cross slot boundaries), against a host reference
// or, for the sorts of one-byte keys, against the sorted output that the 256-bin histogram of
// the input fixes exactly. Every test states the device and host memory it needs and skips,
// saying why, on a smaller machine (at most about 24 GiB of device memory and 12 GiB of host
// memory for one test; every vector dies with its scope).
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace test;
using byte_t = unsigned char;

constexpr std::size_t two_to_31 = std::size_t{1} << 31;
constexpr std::size_t n = two_to_31 + 17;
constexpr std::size_t gib = std::size_t{1} << 30;

/// Empty when the machine has `device_gib` GiB of free device memory and twice `host_gib` GiB
/// of host memory (the test's own vectors plus room for the library's staging and the rest of
/// the machine); otherwise what it lacks.
std::string lacks(std::size_t device_gib, std::size_t host_gib) {
  if (small_run()) return "MULTIGPU_TEST_SMALL is set (sanitizer runs)";
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return "cudaMemGetInfo failed";
  std::ostringstream why;
  if (free_bytes < device_gib * gib) {
    why << "needs " << device_gib << " GiB of free device memory, has " << free_bytes / gib << " GiB";
    return why.str();
  }
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const std::size_t host_bytes = pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) : 0;
  if (host_bytes != 0 && host_bytes < 2 * host_gib * gib) {
    why << "needs a host with " << 2 * host_gib << " GiB of memory (it holds " << host_gib << " GiB at once), has "
        << host_bytes / gib << " GiB";
    return why.str();
  }
  return {};
}

#define SKIP_UNLESS_ROOM(device_gib, host_gib)                                        \
  if (const std::string why = lacks(device_gib, host_gib); !why.empty()) GTEST_SKIP() \
      << why

/// `slots` slots of GPU 0: one piece of n elements, or three with offsets past 2^31.
mg::device_group slots_of_gpu0(std::size_t slots) { return mg::device_group(std::vector<int>(slots, 0)); }

/// First index where the two differ, or success.
template <class T>
::testing::AssertionResult same_elements(const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " against " << want.size();
  if (std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return ::testing::AssertionSuccess();
  std::size_t i = 0;
  while (got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << "first difference at element " << i << " of " << got.size() << ": got "
                                       << +got[i] << ", expected " << +want[i];
}

/// The first `count` elements of v, copied to the host (not the whole of a large output).
template <class T>
std::vector<T> prefix(const mg::distributed_vector<T>& v, std::size_t count) {
  std::vector<T> out(count);
  mg::copy(v.cbegin(), v.cbegin() + static_cast<std::ptrdiff_t>(count), out.begin());
  return out;
}

/// A size-changing call's result in v: its new end is want.size() elements past v's start,
/// and the elements before it are want.
template <class T, class It>
::testing::AssertionResult kept(mg::distributed_vector<T>& v, It end, const std::vector<T>& want) {
  const auto count = static_cast<std::size_t>(end - v.begin());
  if (count != want.size())
    return ::testing::AssertionFailure() << "new end at " << count << ", expected " << want.size();
  return same_elements(prefix(v, count), want);
}

/// How many elements of x start a run of equal neighbours in each segment of `layout`: the
/// sizes of a layout-keeping unique_copy or reduce_by_key result.
std::vector<std::size_t> run_starts_per_segment(const std::vector<byte_t>& x, const mg::distribution& layout) {
  std::vector<std::size_t> counts(layout.segment_count(), 0);
  for (std::size_t s = 0; s < layout.segment_count(); ++s) {
    const std::size_t first = layout.segment_offset(s), last = first + layout.segment_size(s);
    for (std::size_t i = first; i < last; ++i) counts[s] += i == 0 || x[i] != x[i - 1] ? 1 : 0;
  }
  return counts;
}

/// x[i] = i mod 251: every element differs from its neighbours.
std::vector<byte_t> periodic_bytes() {
  std::vector<byte_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<byte_t>(i % 251);
  return x;
}

/// Where the three-slot layout starts its second and third segments.
std::array<std::size_t, 2> three_slot_boundaries() {
  const mg::distribution three = mg::distribution::block(n, 3);
  return {three.segment_offset(1), three.segment_offset(2)};
}

struct not_marked {
  __host__ __device__ bool operator()(byte_t x) const { return x != 0xFF; }
};
struct marked {
  __host__ __device__ bool operator()(byte_t x) const { return x == 0xFF; }
};
struct descending {
  __host__ __device__ bool operator()(byte_t a, byte_t b) const { return a > b; }
};
/// The values of reduce_by_key, computed from the index on the device and on the host.
struct value_at {
  __host__ __device__ std::uint32_t operator()(std::uint32_t i) const { return (i * 2654435761u) ^ (i >> 11); }
};
/// A gather map: entry j reads (stride j + offset) mod size, the last entry the last element.
struct spread {
  std::uint64_t stride, offset, count, size;
  __host__ __device__ std::uint32_t operator()(std::uint32_t j) const {
    if (j + 1 == count) return static_cast<std::uint32_t>(size - 1);
    return static_cast<std::uint32_t>((stride * j + offset) % size);
  }
};

// unique, unique_copy (both forms) with 2^31 + 8 survivors: the count CUB writes, the
// result's size and the STL form's end are past 2^31. The data repeat an element only at a
// few places: the second element, the first element of the second slot (a run of two
// across the boundary), five elements around the third slot's start (a run of six across
// it), the element at 2^31, and the last element.
TEST(PastTwoToThe31, Unique) {
  SKIP_UNLESS_ROOM(10, 6);
  std::vector<byte_t> host = periodic_bytes();
  const auto [b1, b2] = three_slot_boundaries();
  for (std::size_t j : {std::size_t{1}, b1, b2 - 2, b2 - 1, b2, b2 + 1, b2 + 2, two_to_31, n - 1})  // ascending
    host[j] = host[j - 1];
  std::vector<byte_t> want;
  want.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (i == 0 || host[i] != host[i - 1]) want.push_back(host[i]);
  ASSERT_EQ(want.size(), two_to_31 + 8) << "the data's runs";

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s)");
    const mg::device_group group = slots_of_gpu0(slots);
    mg::distributed_vector<byte_t> v(host, group);
    {
      const mg::distributed_vector<byte_t> kept = mg::unique_copy(v);
      EXPECT_EQ(kept.layout(), mg::distribution::from_sizes(run_starts_per_segment(host, v.layout())))
          << "unique_copy, layout kept: each slot keeps the runs that start in it";
      EXPECT_TRUE(same_elements(mg::to_vector(kept), want)) << "unique_copy, layout kept";
    }
    {
      mg::distributed_vector<byte_t> out(n, group);
      const auto end = mg::unique_copy(v.cbegin(), v.cend(), out.begin());
      ASSERT_TRUE(kept(out, end, want)) << "unique_copy into an output";
    }
    const auto end = mg::unique(v);
    ASSERT_TRUE(kept(v, end, want)) << "unique in place";
  }
}

// copy_if (both forms) and remove_if with 2^31 + 13 survivors of 2^31 + 17: large_test.cu
// keeps about half; here the selected count, the result and the STL output pass 2^31. The
// four dropped elements: the first, the last of the first slot, the one before 2^31 and the
// last.
TEST(PastTwoToThe31, CopyIfKeepingMoreThan2To31) {
  SKIP_UNLESS_ROOM(10, 6);
  std::vector<byte_t> host = periodic_bytes();  // never 0xFF
  const auto [b1, b2] = three_slot_boundaries();
  for (std::size_t j : {std::size_t{0}, b1 - 1, two_to_31 - 1, n - 1}) host[j] = 0xFF;
  std::vector<byte_t> want;
  want.reserve(n);
  for (byte_t x : host)
    if (not_marked{}(x)) want.push_back(x);
  ASSERT_EQ(want.size(), two_to_31 + 13) << "the data's marks";

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s)");
    const mg::device_group group = slots_of_gpu0(slots);
    mg::distributed_vector<byte_t> v(host, group);
    {
      const mg::distributed_vector<byte_t> kept = mg::copy_if(v, not_marked{});
      std::vector<std::size_t> sizes(slots);
      for (std::size_t s = 0; s < slots; ++s)
        sizes[s] = static_cast<std::size_t>(std::count_if(host.begin() + v.layout().segment_offset(s),
                                                          host.begin() + v.layout().segment_offset(s) +
                                                              v.layout().segment_size(s),
                                                          not_marked{}));
      EXPECT_EQ(kept.layout(), mg::distribution::from_sizes(sizes)) << "copy_if, layout kept";
      EXPECT_TRUE(same_elements(mg::to_vector(kept), want)) << "copy_if, layout kept";
    }
    {
      mg::distributed_vector<byte_t> out(n, group);
      const auto end = mg::copy_if(v.cbegin(), v.cend(), out.begin(), not_marked{});
      ASSERT_TRUE(kept(out, end, want)) << "copy_if into an output";
    }
    const auto end = mg::remove_if(v, marked{});
    ASSERT_TRUE(kept(v, end, want)) << "remove_if";
  }
}

// reduce_by_key over 2^31 + 17 one-byte keys and 32-bit values (value_at(i), sums wrapping
// modulo 2^32 as on the host): about 44 million runs of 1 to 64 keys, with three runs forced
// over them: one from 1000 before the three-slot layout's second segment to 1000 past its
// third (it covers the whole middle slot, which then starts no run, so its join crosses two
// boundaries), one of 10004 keys across 2^31, and the last six keys. Both forms; on one slot
// the STL form's outputs have room for every key, so it reduces straight into them (one CUB
// call with a 64-bit count).
TEST(PastTwoToThe31, ReduceByKey) {
  // Keys 2 GiB and values 8 GiB, and as much again: the per-slot temporaries, or on one slot
  // the STL form's outputs.
  SKIP_UNLESS_ROOM(24, 4);
  std::vector<byte_t> keys(n);
  {
    std::uint64_t state = 88172645463325252ull;  // xorshift64
    byte_t key = 0;
    for (std::size_t i = 0; i < n; ++key) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      const std::size_t length = std::min<std::size_t>(1 + (state >> 58), n - i);
      std::memset(keys.data() + i, key, length);
      i += length;
    }
  }
  const auto [b1, b2] = three_slot_boundaries();
  for (const auto [first, last] : {std::pair{b1 - 1000, b2 + 1000}, std::pair{two_to_31 - 10000, two_to_31 + 4},
                                   std::pair{n - 6, n}}) {
    byte_t key = 0;  // a key unlike its neighbours': one run exactly
    while (key == keys[first - 1] || (last < n && key == keys[last])) ++key;
    std::memset(keys.data() + first, key, last - first);
  }
  std::vector<byte_t> want_keys;
  std::vector<std::uint32_t> want_sums;
  want_keys.reserve(n / 30);
  want_sums.reserve(n / 30);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t value = value_at{}(static_cast<std::uint32_t>(i));
    if (i > 0 && keys[i] == keys[i - 1]) {
      want_sums.back() += value;
    } else {
      want_keys.push_back(keys[i]);
      want_sums.push_back(value);
    }
  }
  const std::size_t runs = want_keys.size();

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s), " << runs << " runs");
    const mg::device_group group = slots_of_gpu0(slots);
    const mg::distributed_vector<byte_t> k(keys, group);
    mg::distributed_vector<std::uint32_t> v(n, group);
    mg::iota(v, 0u);
    mg::transform(v, v, value_at{});
    {
      const auto [kept_keys, kept_sums] = mg::reduce_by_key(k, v);
      const mg::distribution layout = mg::distribution::from_sizes(run_starts_per_segment(keys, k.layout()));
      EXPECT_EQ(kept_keys.layout(), layout) << "reduce_by_key, layout kept: a run stays on the slot where it starts";
      EXPECT_EQ(kept_sums.layout(), layout) << "reduce_by_key, layout kept";
      EXPECT_TRUE(same_elements(mg::to_vector(kept_keys), want_keys)) << "reduce_by_key, layout kept: keys";
      EXPECT_TRUE(same_elements(mg::to_vector(kept_sums), want_sums)) << "reduce_by_key, layout kept: sums";
    }
    const std::size_t room = slots == 1 ? n : runs;
    mg::distributed_vector<byte_t> keys_out(room, group);
    mg::distributed_vector<std::uint32_t> sums_out(room, group);
    const auto [keys_end, sums_end] =
        mg::reduce_by_key(k.cbegin(), k.cend(), v.cbegin(), keys_out.begin(), sums_out.begin());
    ASSERT_EQ(static_cast<std::size_t>(keys_end - keys_out.begin()), runs) << "reduce_by_key into outputs";
    ASSERT_EQ(static_cast<std::size_t>(sums_end - sums_out.begin()), runs) << "reduce_by_key into outputs";
    EXPECT_TRUE(same_elements(prefix(keys_out, runs), want_keys)) << "reduce_by_key into outputs: keys";
    EXPECT_TRUE(same_elements(prefix(sums_out, runs), want_sums)) << "reduce_by_key into outputs: sums";
  }
}

/// The sorted order of bytes with histogram `count`: fixed exactly by it.
std::vector<byte_t> sorted_from(const std::array<std::size_t, 256>& count, bool ascending) {
  std::vector<byte_t> x(n);
  std::size_t at = 0;
  for (int b = 0; b < 256; ++b) {
    const auto value = static_cast<byte_t>(ascending ? b : 255 - b);
    std::memset(x.data() + at, value, count[value]);
    at += count[value];
  }
  return x;
}

std::vector<byte_t> hashed_bytes() {
  std::vector<byte_t> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<byte_t>((i * 2654435761u) >> 13);
  x[n - 1] = 0x00;  // the last element, past 2^31, must move to the front
  return x;
}

// sort with the default order (CUB radix sort) and stable_sort with a comparator (CUB merge
// sort): for one-byte keys the sorted output is fixed by the input's 256-bin histogram, so
// it is compared exactly; is_sorted is asked as well.
TEST(PastTwoToThe31, SortAndStableSort) {
  SKIP_UNLESS_ROOM(10, 6);
  const std::vector<byte_t> host = hashed_bytes();
  std::array<std::size_t, 256> count{};
  for (byte_t x : host) ++count[x];

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s)");
    const mg::device_group group = slots_of_gpu0(slots);
    mg::distributed_vector<byte_t> v(host, group);
    mg::sort(v);
    EXPECT_TRUE(mg::is_sorted(v)) << "sort (radix)";
    EXPECT_TRUE(same_elements(mg::to_vector(v), sorted_from(count, true))) << "sort (radix)";

    mg::copy(host.begin(), host.end(), v.begin());
    mg::stable_sort(v, descending{});
    EXPECT_TRUE(mg::is_sorted(v, descending{})) << "stable_sort (merge sort, descending)";
    EXPECT_TRUE(same_elements(mg::to_vector(v), sorted_from(count, false))) << "stable_sort (merge sort, descending)";
  }
}

// stable_sort_by_key of one-byte keys with their indices as values: equal keys must keep
// their input order, so the values of key b are exactly the positions of b, ascending.
TEST(PastTwoToThe31, StableSortByKeyKeepsInputOrder) {
  // Keys 2 GiB and values 8 GiB, and a spare of each.
  SKIP_UNLESS_ROOM(24, 12);
  const std::vector<byte_t> host = hashed_bytes();
  std::array<std::size_t, 256> count{};
  for (byte_t x : host) ++count[x];

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s)");
    const mg::device_group group = slots_of_gpu0(slots);
    mg::distributed_vector<byte_t> keys(host, group);
    mg::distributed_vector<std::uint32_t> values(n, group);
    mg::iota(values, 0u);
    mg::stable_sort_by_key(keys, values);
    EXPECT_TRUE(same_elements(mg::to_vector(keys), sorted_from(count, true))) << "stable_sort_by_key: keys";
    const std::vector<std::uint32_t> got = mg::to_vector(values);
    std::array<std::size_t, 256> next{};  // where key b's next value must be
    for (int b = 1; b < 256; ++b) next[b] = next[b - 1] + count[b - 1];
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t at = next[host[i]]++;
      if (got[at] != i) {
        ADD_FAILURE() << "stable_sort_by_key: element " << i << " (key " << int(host[i]) << ") should be at " << at
                      << ", which holds the value " << got[at];
        break;
      }
    }
  }
}

// gather from 2^31 + 17 bytes. One slot: a map of n 32-bit indices j -> 3j + 1 mod n (a
// permutation but for its last entry, which reads the last element), so the kernel runs over
// more than 2^31 entries and reads past 2^31. Three slots: 2^28 + 3 entries j -> 24j + 7 mod n,
// so every slot's requests go to all three owners and to offsets past 2^31 (a full map of n
// entries would need about 90 GB for the exchange's requests).
TEST(PastTwoToThe31, Gather) {
  // Input 2 GiB, a map of 8 GiB and an output of 2 GiB on one slot; on three, about as much
  // for the requests of the smaller map.
  SKIP_UNLESS_ROOM(16, 4);
  const std::vector<byte_t> host = hashed_bytes();

  for (std::size_t slots : {1, 3}) {
    SCOPED_TRACE(testing::Message() << slots << " slot(s)");
    const mg::device_group group = slots_of_gpu0(slots);
    const std::size_t m = slots == 1 ? n : (std::size_t{1} << 28) + 3;
    const spread f = slots == 1 ? spread{3, 1, m, n} : spread{24, 7, m, n};
    const mg::distributed_vector<byte_t> in(host, group);
    mg::distributed_vector<std::uint32_t> map(m, group);
    mg::iota(map, 0u);
    mg::transform(map, map, f);
    mg::distributed_vector<byte_t> out(m, group);
    mg::gather(map, in, out);
    const std::vector<byte_t> got = mg::to_vector(out);
    ASSERT_EQ(got.size(), m);
    std::uint64_t index = f.offset % n;  // f(j), stepped instead of a division per entry
    for (std::size_t j = 0; j < m; ++j, index = index + f.stride >= n ? index + f.stride - n : index + f.stride) {
      const std::size_t from = j + 1 == m ? n - 1 : static_cast<std::size_t>(index);
      if (got[j] != host[from]) {
        ADD_FAILURE() << "gather: out[" << j << "] = " << int(got[j]) << ", expected in[" << from
                      << "] = " << int(host[from]);
        break;
      }
    }
  }
}

}  // namespace
