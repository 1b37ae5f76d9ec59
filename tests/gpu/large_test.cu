// Past 2^31 elements: reduce, transform_reduce, transform, both scans, copy, copy_if, to_vector and a
// periodic halo exchange over 2^31 + 17 one-byte elements, on one slot (one piece longer
// than any 32-bit count: CUB's 64-bit dispatch) and on three (global offsets past 2^31).
// Each result is compared with the host. Needs about 7 GiB of device memory and 6 GiB of host memory;
// skipped on smaller machines. unique, reduce_by_key, the sorts, gather and copy_if with more
// than 2^31 survivors: large_algorithms_test.cu.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace test;
using byte_t = unsigned char;

struct flip {
  __host__ __device__ byte_t operator()(byte_t x) const { return static_cast<byte_t>(x ^ 0x5A); }
};
struct widen {
  __host__ __device__ unsigned long long operator()(byte_t x) const { return x; }
};
struct top_bit {
  __host__ __device__ bool operator()(byte_t x) const { return (x & 0x80) != 0; }
};
struct add_bytes {  // wraps modulo 256, as the host reference does
  __host__ __device__ byte_t operator()(byte_t a, byte_t b) const { return static_cast<byte_t>(a + b); }
};

constexpr std::size_t n = (std::size_t{1} << 31) + 17;

/// First index where the two differ, or "equal".
::testing::AssertionResult same_bytes(const std::vector<byte_t>& got, const std::vector<byte_t>& want) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "sizes differ: " << got.size() << " against " << want.size();
  if (std::memcmp(got.data(), want.data(), got.size()) == 0) return ::testing::AssertionSuccess();
  std::size_t i = 0;
  while (got[i] == want[i]) ++i;
  return ::testing::AssertionFailure() << "first difference at element " << i << ": got " << int(got[i])
                                       << ", expected " << int(want[i]);
}

TEST(PastTwoToThe31, OneByteElementsOnOneAndThreeSlots) {
  if (small_run()) GTEST_SKIP() << "MULTIGPU_TEST_SMALL is set (sanitizer runs)";
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  if (free_bytes < (std::size_t{10} << 30)) GTEST_SKIP() << "needs 10 GiB of free device memory, has " << free_bytes;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) < (std::size_t{16} << 30))
    GTEST_SKIP() << "needs a host with 16 GiB of memory (it holds three 2 GiB vectors at once)";

  std::vector<byte_t> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<byte_t>((i * 2654435761u) >> 13);
  host[n - 1] = 0xFF;  // the last element, past 2^31, must be counted
  unsigned long long sum = 0;
  for (byte_t x : host) sum += x;

  for (const auto& group : {mg::device_group({0}), mg::device_group({0, 0, 0})}) {
    SCOPED_TRACE(testing::Message() << group.size() << " slot(s)");
    mg::distributed_vector<byte_t> v(host, group);
    EXPECT_TRUE(same_bytes(mg::to_vector(v), host)) << "to_vector after the upload";

    EXPECT_EQ(mg::transform_reduce(v, 0ULL, cuda::std::plus<>{}, widen{}), sum);
    EXPECT_EQ(mg::reduce(v, byte_t{0}, add_bytes{}), static_cast<byte_t>(sum)) << "order-keeping reduction";
    EXPECT_EQ(mg::reduce(v.cbegin() + 3, v.cend(), byte_t{0}, mg::commutative(add_bytes{})),
              static_cast<byte_t>(sum - host[0] - host[1] - host[2]))
        << "commutative reduction of a subrange";

    {
      mg::distributed_vector<byte_t> out(n, group);
      mg::transform(v, out, flip{});
      std::vector<byte_t> want(host);
      for (auto& x : want) x = flip{}(x);
      EXPECT_TRUE(same_bytes(mg::to_vector(out), want)) << "transform";
    }
    {
      mg::distributed_vector<byte_t> out(n, group);
      mg::copy(v, out);
      EXPECT_TRUE(same_bytes(mg::to_vector(out), host)) << "copy";
      // A copy across the 2^31 boundary, into another layout.
      mg::distributed_vector<byte_t> shifted(n, mg::device_group({0, 0}));
      mg::copy(v.cbegin(), v.cend() - 5, shifted.begin() + 5);
      std::vector<byte_t> want(n, 0);
      std::memcpy(want.data() + 5, host.data(), n - 5);
      EXPECT_TRUE(same_bytes(mg::to_vector(shifted), want)) << "copy into another group at an offset";
    }
    {
      mg::distributed_vector<byte_t> out(n, group);
      mg::inclusive_scan(v.cbegin(), v.cend(), out.begin(), add_bytes{});
      std::vector<byte_t> want(n);
      byte_t running = 0;
      for (std::size_t i = 0; i < n; ++i) want[i] = running = static_cast<byte_t>(running + host[i]);
      EXPECT_TRUE(same_bytes(mg::to_vector(out), want)) << "inclusive_scan";
    }
    {
      mg::distributed_vector<byte_t> out(n, group);
      mg::exclusive_scan(v.cbegin(), v.cend(), out.begin(), byte_t{7}, add_bytes{});
      std::vector<byte_t> want(n);
      byte_t running = 7;
      for (std::size_t i = 0; i < n; ++i) {
        want[i] = running;
        running = static_cast<byte_t>(running + host[i]);
      }
      EXPECT_TRUE(same_bytes(mg::to_vector(out), want)) << "exclusive_scan";
    }
    {
      // copy_if past 2^31: about half the bytes survive (the top bit set), in both forms.
      std::vector<byte_t> want;
      want.reserve(n / 2 + 1024);
      for (byte_t x : host)
        if (top_bit{}(x)) want.push_back(x);
      {
        mg::distributed_vector<byte_t> kept = mg::copy_if(v, top_bit{});
        EXPECT_TRUE(same_bytes(mg::to_vector(kept), want)) << "copy_if, layout kept";
      }
      mg::distributed_vector<byte_t> out(n, group);
      auto end = mg::copy_if(v.cbegin(), v.cend(), out.begin(), top_bit{});
      ASSERT_EQ(static_cast<std::size_t>(end - out.begin()), want.size()) << "copy_if into an output";
      std::vector<byte_t> got = mg::to_vector(out);
      got.resize(want.size());
      EXPECT_TRUE(same_bytes(got, want)) << "copy_if into an output";
    }
    {
      // A periodic halo of 5 on each side: every segment's halo cells must hold its
      // neighbours' boundary elements, indices taken modulo n.
      constexpr std::size_t width = 5;
      mg::distributed_vector<byte_t> h(n, mg::halo{width, true}, group);
      mg::copy(host.begin(), host.end(), h.begin());
      mg::exchange_halos(h);
      group.synchronize();  // the reads below are plain cudaMemcpy calls, not on the slots' streams
      for (const auto seg : h.segments()) {
        if (seg.empty()) continue;
        std::vector<byte_t> left(width), right(width);
        ASSERT_EQ(cudaMemcpy(left.data(), seg.data() - width, width, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(cudaMemcpy(right.data(), seg.data() + seg.size(), width, cudaMemcpyDeviceToHost), cudaSuccess);
        for (std::size_t j = 0; j < width; ++j) {
          EXPECT_EQ(left[j], host[(seg.offset() + n - width + j) % n]) << "left halo of slot " << seg.slot() << ", cell " << j;
          EXPECT_EQ(right[j], host[(seg.offset() + seg.size() + j) % n]) << "right halo of slot " << seg.slot() << ", cell " << j;
        }
      }
    }
  }
}

}  // namespace
