// The slot count never changes a result: unique, unique_copy, reduce_by_key (both forms) and
// inclusive_scan_by_key with a tolerance predicate, |a - b| <= 1, which is not an equivalence
// (0 ~ 1 and 1 ~ 2, but not 0 ~ 2), so that comparing a run's first key with the next key
// would split runs that comparing neighbours keeps whole. On 1, 2, 3 and 8 slots of GPU 0,
// host staged too, in block layouts and in ragged ones whose middle slots hold one element or
// none, for sizes from 0 through fewer elements than slots and primes to tens of thousands.
// Every output must equal an independent host reference that compares neighbours as CUB and
// Thrust do (a run's key for reduce_by_key is its last key, the one CUB writes; unique keeps a
// run's first element), and must be identical whatever the slot count.
#include <multigpu/multigpu.hpp>

#include "by_key_support.hpp"

#include <algorithm>
#include <optional>
#include <random>
#include <utility>
#include <vector>

namespace {

using namespace test;

/// |a - b| <= 1: neighbours one apart are in one run, so 0, 1, 2, 3 is one run.
struct near_by_one {
  __host__ __device__ bool operator()(int a, int b) const { return a - b <= 1 && b - a <= 1; }
};

// ---- the host reference, written from the definition: neighbours are compared ---------------

/// The first element of every run (a run continues while eq(x[i - 1], x[i])).
template <class Eq>
std::vector<int> unique_reference(const std::vector<int>& keys, Eq eq) {
  std::vector<int> out;
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (i == 0 || !eq(keys[i - 1], keys[i])) out.push_back(keys[i]);
  return out;
}

/// Every run's last key and the fold of its values, in order.
template <class Eq, class Op>
std::pair<std::vector<int>, std::vector<affine>> reduce_reference(const std::vector<int>& keys,
                                                                  const std::vector<affine>& values, Eq eq, Op op) {
  std::pair<std::vector<int>, std::vector<affine>> out;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (i > 0 && eq(keys[i - 1], keys[i])) {
      out.first.back() = keys[i];
      out.second.back() = op(out.second.back(), values[i]);
    } else {
      out.first.push_back(keys[i]);
      out.second.push_back(values[i]);
    }
  }
  return out;
}

/// out[i]: the fold of the values from the start of i's run to i.
template <class Eq, class Op>
std::vector<affine> scan_reference(const std::vector<int>& keys, const std::vector<affine>& values, Eq eq, Op op) {
  std::vector<affine> out(values.size());
  for (std::size_t i = 0; i < keys.size(); ++i)
    out[i] = i > 0 && eq(keys[i - 1], keys[i]) ? op(out[i - 1], values[i]) : values[i];
  return out;
}

/// How many runs start on each slot of `layout` (where the layout-keeping forms keep them).
template <class Eq>
std::vector<std::size_t> run_starts_per_slot(const std::vector<int>& keys, const mg::distribution& layout, Eq eq) {
  std::vector<std::size_t> starts(layout.segment_count(), 0);
  for (std::size_t s = 0; s < starts.size(); ++s)
    for (std::size_t i = layout.segment_offset(s); i < layout.segment_offset(s) + layout.segment_size(s); ++i)
      starts[s] += i == 0 || !eq(keys[i - 1], keys[i]) ? 1 : 0;
  return starts;
}

// ---- inputs ----------------------------------------------------------------------------------

const char* const key_kinds[] = {"one rising chain", "alternating 0 1", "chains of five", "random steps",
                                 "steps of two"};

/// Keys whose runs under near_by_one are: 0 1 2 3 ... (one run whose first and last keys are
/// far apart), 0 1 0 1 ... (one run), chains of five rising keys broken by a jump of three,
/// random steps in [-2, 3] (runs of random lengths), and 0 2 4 ... (every key its own run).
std::vector<int> tolerance_keys(std::size_t n, int kind) {
  std::vector<int> keys(n);
  std::mt19937 gen(static_cast<unsigned>(7919 * n + kind));
  std::uniform_int_distribution<int> step(-2, 3);
  int k = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) {
      switch (kind) {
        case 0: k += 1; break;
        case 1: k = 1 - k; break;
        case 2: k += i % 5 == 0 ? 3 : 1; break;
        case 3: k += step(gen); break;
        default: k += 2; break;
      }
    }
    keys[i] = k;
  }
  return keys;
}

/// A layout whose slots before the last hold 1, 0, 2, 1, 1, 0, 2, ... elements (while there
/// are any) and the last slot the rest: runs cross slots of one element and skip empty ones.
mg::distribution ragged_layout(std::size_t n, std::size_t slots) {
  static const std::size_t pattern[] = {1, 0, 2, 1};
  std::vector<std::size_t> sizes(slots, 0);
  std::size_t left = n;
  for (std::size_t s = 0; s + 1 < slots; ++s) {
    sizes[s] = std::min(left, pattern[s % 4]);
    left -= sizes[s];
  }
  sizes[slots - 1] = left;
  return mg::distribution::from_sizes(sizes);
}

/// The groups: 1, 2, 3 and 8 slots of GPU 0, and host-staged groups of 2, 3 and 8 slots. Built
/// once per binary; the first is the one-slot group every other is compared with.
const std::vector<shape>& slot_shapes() {
  static const std::vector<shape> all = [] {
    std::vector<shape> s;
    s.push_back({"{0}", mg::device_group({0})});
    s.push_back({"{0,0}", mg::device_group({0, 0})});
    s.push_back({"{0,0,0}", mg::device_group({0, 0, 0})});
    s.push_back({"{0 x8}", mg::device_group(std::vector<int>(8, 0))});
    s.push_back({"{0,0} host staged", mg::device_group({0, 0}, {mg::peer_policy::host_staged})});
    s.push_back({"{0,0,0} host staged", mg::device_group({0, 0, 0}, {mg::peer_policy::host_staged})});
    s.push_back({"{0 x8} host staged", mg::device_group(std::vector<int>(8, 0), {mg::peer_policy::host_staged})});
    return s;
  }();
  return all;
}

/// Where the STL forms write when the output is on another group than the input.
const mg::device_group& elsewhere() {
  static const mg::device_group g({0, 0});
  return g;
}

/// 0, 1, fewer elements than eight slots, primes, and a few thousand up to tens of thousands
/// (several CUB tiles per slot).
std::vector<std::size_t> slot_test_sizes() {
  if (small_run()) return {0, 1, 2, 3, 5, 7, 13, 97, 1009, 4099};
  return {0, 1, 2, 3, 5, 7, 13, 97, 1009, 4099, 65537};
}

// ---- the calls under test --------------------------------------------------------------------

/// Everything the algorithms return for one input, gathered to the host.
struct outputs {
  std::vector<int> unique_kept, unique_copied, unique_in_place;
  std::vector<int> keys, keys_elsewhere, keys_kept;
  std::vector<affine> aggregates, aggregates_elsewhere, aggregates_kept;
  std::vector<affine> scanned, scanned_elsewhere, scanned_in_place;
  friend bool operator==(const outputs&, const outputs&) = default;
};

template <class T>
std::vector<T> first_of(const mg::distributed_vector<T>& v, std::ptrdiff_t count) {
  std::vector<T> all = mg::to_vector(v);
  all.resize(static_cast<std::size_t>(count));
  return all;
}

/// Runs every form on keys laid out as `layout` over `g` (the values in blocks over `g`, so
/// that they line up with the keys only where the layouts agree), checking the layouts that
/// the layout-keeping forms promise.
outputs run_all(const mg::device_group& g, const mg::distribution& layout, const std::vector<int>& keys,
                const std::vector<affine>& values) {
  const std::size_t n = keys.size();
  const near_by_one eq;
  outputs got;
  mg::distributed_vector<int> k(g, layout);
  mg::copy(keys.begin(), keys.end(), k.begin());
  mg::distributed_vector<affine> v(values.begin(), values.end(), g);
  const std::vector<std::size_t> starts = run_starts_per_slot(keys, layout, eq);

  // unique_copy, layout kept and into a vector on another group.
  const mg::distributed_vector<int> kept = mg::unique_copy(k, eq);
  EXPECT_EQ(kept.layout(), mg::distribution::from_sizes(starts)) << "unique_copy keeps each run where it starts";
  got.unique_kept = mg::to_vector(kept);
  mg::distributed_vector<int> unique_out(n, -1, elsewhere());
  got.unique_copied = first_of(unique_out, mg::unique_copy(k.cbegin(), k.cend(), unique_out.begin(), eq) -
                                               unique_out.begin());

  // reduce_by_key into vectors on the keys' group, into vectors on another group, layout kept.
  mg::distributed_vector<int> keys_out(n, -1, g);
  mg::distributed_vector<affine> aggregates_out(n, g);
  auto ends = mg::reduce_by_key(k.cbegin(), k.cend(), v.cbegin(), keys_out.begin(), aggregates_out.begin(), eq,
                                compose{});
  EXPECT_EQ(ends.first - keys_out.begin(), ends.second - aggregates_out.begin());
  got.keys = first_of(keys_out, ends.first - keys_out.begin());
  got.aggregates = first_of(aggregates_out, ends.second - aggregates_out.begin());
  mg::distributed_vector<int> keys_far(n, -1, elsewhere());
  mg::distributed_vector<affine> aggregates_far(n, elsewhere());
  ends = mg::reduce_by_key(k, v, keys_far, aggregates_far, eq, compose{});
  got.keys_elsewhere = first_of(keys_far, ends.first - keys_far.begin());
  got.aggregates_elsewhere = first_of(aggregates_far, ends.second - aggregates_far.begin());
  auto [keys_kept, aggregates_kept] = mg::reduce_by_key(k, v, eq, compose{});
  EXPECT_EQ(keys_kept.layout(), mg::distribution::from_sizes(starts)) << "reduce_by_key keeps each run where it starts";
  EXPECT_EQ(aggregates_kept.layout(), keys_kept.layout());
  got.keys_kept = mg::to_vector(keys_kept);
  got.aggregates_kept = mg::to_vector(aggregates_kept);

  // inclusive_scan_by_key into a vector on the keys' group, on another group, and in place.
  mg::distributed_vector<affine> scanned(n, g), scanned_far(n, elsewhere()), in_place(v);
  mg::inclusive_scan_by_key(k, v, scanned, eq, compose{});
  got.scanned = mg::to_vector(scanned);
  mg::inclusive_scan_by_key(k.cbegin(), k.cend(), v.cbegin(), scanned_far.begin(), eq, compose{});
  got.scanned_elsewhere = mg::to_vector(scanned_far);
  mg::inclusive_scan_by_key(k, in_place, in_place, eq, compose{});
  got.scanned_in_place = mg::to_vector(in_place);

  // unique in place, last: it rewrites the keys.
  got.unique_in_place = first_of(k, mg::unique(k, eq) - k.begin());
  return got;
}

/// Every output against the reference.
void expect_reference(const outputs& got, const std::vector<int>& keys, const std::vector<affine>& values) {
  const near_by_one eq;
  const std::vector<int> unique_want = unique_reference(keys, eq);
  const auto [keys_want, aggregates_want] = reduce_reference(keys, values, eq, compose{});
  const std::vector<affine> scan_want = scan_reference(keys, values, eq, compose{});
  EXPECT_TRUE(same_elements(got.unique_kept, unique_want)) << "unique_copy, layout kept";
  EXPECT_TRUE(same_elements(got.unique_copied, unique_want)) << "unique_copy into another group";
  EXPECT_TRUE(same_elements(got.unique_in_place, unique_want)) << "unique in place";
  EXPECT_TRUE(same_elements(got.keys, keys_want)) << "reduce_by_key keys";
  EXPECT_TRUE(same_elements(got.aggregates, aggregates_want)) << "reduce_by_key aggregates";
  EXPECT_TRUE(same_elements(got.keys_elsewhere, keys_want)) << "reduce_by_key keys on another group";
  EXPECT_TRUE(same_elements(got.aggregates_elsewhere, aggregates_want)) << "reduce_by_key aggregates on another group";
  EXPECT_TRUE(same_elements(got.keys_kept, keys_want)) << "reduce_by_key keys, layout kept";
  EXPECT_TRUE(same_elements(got.aggregates_kept, aggregates_want)) << "reduce_by_key aggregates, layout kept";
  EXPECT_TRUE(same_elements(got.scanned, scan_want)) << "inclusive_scan_by_key";
  EXPECT_TRUE(same_elements(got.scanned_elsewhere, scan_want)) << "inclusive_scan_by_key on another group";
  EXPECT_TRUE(same_elements(got.scanned_in_place, scan_want)) << "inclusive_scan_by_key in place";
}

}  // namespace

// The reference itself, on an input worked out by hand: 0 1 2 3 | 7 8 | 10 is three runs
// under |a - b| <= 1 (std::unique, which compares with the element it kept, would keep 0 2 7 10).
TEST(SlotCount, TheReferenceComparesNeighbours) {
  const std::vector<int> keys{0, 1, 2, 3, 7, 8, 10};
  const std::vector<affine> values = values_at<affine>(keys.size());
  EXPECT_EQ(unique_reference(keys, near_by_one{}), (std::vector<int>{0, 7, 10}));
  const auto [last_keys, aggregates] = reduce_reference(keys, values, near_by_one{}, compose{});
  EXPECT_EQ(last_keys, (std::vector<int>{3, 8, 10})) << "each run's last key";
  const compose c;
  EXPECT_EQ(aggregates, (std::vector<affine>{c(c(c(values[0], values[1]), values[2]), values[3]),
                                             c(values[4], values[5]), values[6]}));
  const std::vector<affine> scanned = scan_reference(keys, values, near_by_one{}, compose{});
  EXPECT_EQ(scanned[3], aggregates[0]);
  EXPECT_EQ(scanned[4], values[4]);
}

// 0 1 2 3 spread over the slots (two per slot on two slots, one per slot and four empty on
// eight): one run, whose key is 3 and whose first element is 0, as on one slot.
TEST(SlotCount, ARunAcrossSlotsIsOneRunWithItsLastKey) {
  const std::vector<int> keys{0, 1, 2, 3};
  const std::vector<affine> values = values_at<affine>(keys.size());
  for (const auto& s : slot_shapes()) {
    SCOPED_TRACE(s.name);
    mg::distributed_vector<int> k(keys, s.group);
    mg::distributed_vector<affine> v(values, s.group);
    auto [last_keys, aggregates] = mg::reduce_by_key(k, v, near_by_one{}, compose{});
    EXPECT_EQ(mg::to_vector(last_keys), std::vector<int>{3});
    EXPECT_EQ(mg::to_vector(aggregates), reduce_reference(keys, values, near_by_one{}, compose{}).second);
    EXPECT_EQ(mg::to_vector(mg::unique_copy(k, near_by_one{})), std::vector<int>{0});
  }
}

TEST(SlotCount, ToleranceRunsAreTheSameOnEverySlotCount) {
  for (int kind = 0; kind < 5; ++kind)
    for (std::size_t n : slot_test_sizes()) {
      const std::vector<int> keys = tolerance_keys(n, kind);
      const std::vector<affine> values = values_at<affine>(n);
      std::optional<outputs> one_slot;
      for (const auto& s : slot_shapes())
        for (bool ragged : {false, true}) {
          if (ragged && s.group.size() == 1) continue;  // one slot has one layout
          SCOPED_TRACE(testing::Message() << s.name << (ragged ? " ragged" : " blocks") << " n=" << n << ", "
                                          << key_kinds[kind]);
          const mg::distribution layout =
              ragged ? ragged_layout(n, s.group.size()) : mg::distribution::block(n, s.group.size());
          const outputs got = run_all(s.group, layout, keys, values);
          expect_reference(got, keys, values);
          if (!one_slot)
            one_slot = got;  // the first shape is one slot
          else
            EXPECT_TRUE(got == *one_slot) << "differs from the one-slot result";
        }
    }
}
