// The host side of the distributed sort: the radix order of floats, and the exact splitting
// of sorted runs at given ranks, checked against a brute-force merge for duplicate-heavy
// keys and uneven layouts.
#include <multigpu/algorithm/detail/sort/order.hpp>
#include <multigpu/algorithm/detail/sort/splitters.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace mgd = multigpu::detail;

TEST(Splitters, RadixOrderOfFloats) {
  const mgd::radix_less<float> less;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_FALSE(less(-0.0f, 0.0f));
  EXPECT_FALSE(less(0.0f, -0.0f));
  EXPECT_TRUE(less(inf, nan));
  EXPECT_TRUE(less(-nan, -inf));
  EXPECT_TRUE(less(-1.0f, -0.0f));
  EXPECT_TRUE(less(0.0f, 1e-30f));
  EXPECT_TRUE(less(-2.0f, -1.0f));
  const mgd::radix_less<double> dless;
  EXPECT_TRUE(dless(-std::numeric_limits<double>::infinity(), -1e300));
  EXPECT_TRUE(dless(std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()));
  const mgd::radix_less<int> iless;
  EXPECT_TRUE(iless(-5, 3));
}

struct element {
  int key;
  std::size_t index;
};
bool before(const element& a, const element& b) { return a.key < b.key || (a.key == b.key && a.index < b.index); }

/// The (key, index) order the device's count_before uses, for any order on the keys.
template <class Order>
struct indexed_order {
  Order order;
  bool operator()(const element& a, const element& b) const {
    return order(a.key, b.key) || (!order(b.key, a.key) && a.index < b.index);
  }
};

/// Runs the search the way sort does on the device, with host binary searches standing in
/// for the device's, and returns the checked splits; rounds says how many rounds it took.
/// With as_table the counts go to the search as one strided table, as sort hands them over.
template <class Order = std::less<int>>
std::vector<std::vector<std::size_t>> search(const std::vector<std::vector<int>>& runs,
                                             const std::vector<std::size_t>& offsets,
                                             const std::vector<std::size_t>& targets, std::size_t per_run,
                                             std::size_t* rounds = nullptr, Order order = {}, bool as_table = false) {
  const indexed_order<Order> earlier{order};
  std::vector<std::size_t> sizes;
  for (const auto& r : runs) sizes.push_back(r.size());
  mgd::exact_splitting s(sizes, targets, per_run);
  while (!s.done()) {
    s.plan_round();
    std::vector<std::vector<std::size_t>> counts(runs.size());
    for (std::size_t r = 0; r < runs.size(); ++r)
      for (const auto& c : s.candidates()) {
        const element x{runs[c.run][c.position], offsets[c.run] + c.position};
        std::size_t lo = 0, hi = runs[r].size();
        while (lo < hi) {
          const std::size_t mid = (lo + hi) / 2;
          if (earlier({runs[r][mid], offsets[r] + mid}, x))
            lo = mid + 1;
          else
            hi = mid;
        }
        counts[r].push_back(lo);
      }
    if (as_table) {
      const std::size_t stride = s.candidates().size() + 3;  // rows wider than a round, as in sort
      std::vector<std::size_t> table(runs.size() * stride, 0);
      for (std::size_t r = 0; r < runs.size(); ++r) std::copy(counts[r].begin(), counts[r].end(), &table[r * stride]);
      s.absorb(table.data(), stride);
    } else {
      s.absorb(counts);
    }
    if (s.rounds() > 64) throw std::runtime_error("the search does not end");
  }
  if (rounds) *rounds = s.rounds();
  return s.checked_splits();
}

/// The same splits by brute force: merge everything, and count per run among the first t.
std::vector<std::vector<std::size_t>> brute_force(const std::vector<std::vector<int>>& runs,
                                                  const std::vector<std::size_t>& offsets,
                                                  const std::vector<std::size_t>& targets) {
  std::vector<std::pair<element, std::size_t>> all;
  for (std::size_t r = 0; r < runs.size(); ++r)
    for (std::size_t p = 0; p < runs[r].size(); ++p) all.push_back({{runs[r][p], offsets[r] + p}, r});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return before(a.first, b.first); });
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t t : targets) {
    std::vector<std::size_t> split(runs.size(), 0);
    for (std::size_t i = 0; i < t; ++i) ++split[all[i].second];
    out.push_back(split);
  }
  return out;
}

std::vector<int> make_keys(const std::string& d, std::size_t n, std::mt19937& rng) {
  std::vector<int> keys(n);
  std::uniform_int_distribution<int> wide(-1000000, 1000000);
  std::bernoulli_distribution coin(0.5), rare(0.01);
  for (std::size_t i = 0; i < n; ++i) {
    if (d == "all equal")
      keys[i] = 3;
    else if (d == "two values")
      keys[i] = coin(rng) ? 1 : 2;
    else if (d == "99% one value")
      keys[i] = rare(rng) ? wide(rng) : 7;
    else if (d == "sorted")
      keys[i] = static_cast<int>(i);
    else if (d == "reverse sorted")
      keys[i] = -static_cast<int>(i);
    else
      keys[i] = wide(rng);
  }
  return keys;
}

TEST(Splitters, ExactSplitsAtTheSegmentOffsetsMatchAMergeForAnyDistributionAndLayout) {
  std::mt19937 rng(5);
  const std::size_t n = 20011;
  const std::vector<std::pair<std::string, std::vector<std::size_t>>> layouts{
      {"block", {2502, 2502, 2502, 2501, 2501, 2501, 2501, 2501}},
      {"half in one", {10011, 0, 2000, 2000, 2000, 2000, 2000, 0}},
      {"one segment holds all but one", {1, 0, 0, 0, 0, 0, 0, 20010}},
      {"two slots", {10005, 10006}},
      {"one slot", {20011}},
  };
  for (const char* dist : {"random", "all equal", "two values", "99% one value", "sorted", "reverse sorted"})
    for (const auto& [name, sizes] : layouts)
      for (std::size_t per_run : {2u, 16u, 512u}) {
        SCOPED_TRACE(std::string(dist) + ", " + name + ", " + std::to_string(per_run) + " candidates per run");
        const std::vector<int> keys = make_keys(dist, n, rng);
        const std::size_t k = sizes.size();
        std::vector<std::vector<int>> runs(k);
        std::vector<std::size_t> offsets(k), targets;
        std::size_t offset = 0;
        for (std::size_t s = 0; s < k; ++s) {
          runs[s].assign(keys.begin() + static_cast<std::ptrdiff_t>(offset),
                         keys.begin() + static_cast<std::ptrdiff_t>(offset + sizes[s]));
          std::stable_sort(runs[s].begin(), runs[s].end());
          offsets[s] = offset;
          if (s > 0) targets.push_back(offset);
          offset += sizes[s];
        }
        std::size_t rounds = 0;
        const auto got = search(runs, offsets, targets, per_run, &rounds);
        EXPECT_EQ(got, brute_force(runs, offsets, targets));
        // Each round shrinks every window below one candidate spacing; one more round ends it.
        const double bound = std::ceil(std::log(static_cast<double>(n)) / std::log(static_cast<double>(per_run))) + 2;
        EXPECT_LE(static_cast<double>(rounds), bound);
      }
}

TEST(Splitters, AnyTargetRanksIncludingTheEnds) {
  std::mt19937 rng(11);
  const std::vector<std::size_t> sizes{0, 37, 1, 0, 400, 2};
  std::vector<std::vector<int>> runs;
  std::vector<std::size_t> offsets;
  std::size_t offset = 0, total = 0;
  for (std::size_t size : sizes) {
    std::vector<int> run = make_keys("two values", size, rng);
    std::sort(run.begin(), run.end());
    runs.push_back(run);
    offsets.push_back(offset);
    offset += size;
    total += size;
  }
  std::vector<std::size_t> targets{0, 0, 1, 2, 39, 200, total - 1, total, total};
  EXPECT_EQ(search(runs, offsets, targets, 4), brute_force(runs, offsets, targets));
  EXPECT_EQ(search(runs, offsets, {}, 4).size(), 0u);
}

TEST(Splitters, AnOrderThatIsNotStrictWeakThrowsInsteadOfLoopingOrPlanningOutOfBounds) {
  // <= on all-equal keys: every candidate has every element before it, so the windows never
  // move; the search must give up with std::invalid_argument, not loop.
  const std::vector<std::vector<int>> equal{{3, 3}, {3, 3}};
  EXPECT_THROW(search(equal, {0, 2}, {2}, 2, nullptr, std::less_equal<int>{}), std::invalid_argument);
  // Orders that are not strict weak orders at all (a hash of the pair): the search either
  // throws std::invalid_argument or returns splits that add up and nest, whatever happens.
  std::mt19937 rng(3);
  int threw = 0, returned = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const unsigned salt = static_cast<unsigned>(trial);
    auto chaos = [salt](int a, int b) {  // a 32-bit mix of the pair: no order at all
      std::uint32_t h = static_cast<std::uint32_t>(a) * 0x9E3779B1u ^ (static_cast<std::uint32_t>(b) + salt);
      h ^= h >> 16;
      h *= 0x85EBCA6Bu;
      h ^= h >> 13;
      return (h & 1u) != 0;
    };
    const std::size_t k = 2 + static_cast<std::size_t>(trial % 4);
    std::vector<std::vector<int>> runs(k);
    std::vector<std::size_t> offsets(k), targets;
    std::size_t offset = 0;
    for (std::size_t s = 0; s < k; ++s) {
      runs[s] = make_keys(trial % 2 ? "two values" : "random", 1 + rng() % 40, rng);
      offsets[s] = offset;
      if (s > 0) targets.push_back(offset);
      offset += runs[s].size();
    }
    try {
      const auto splits = search(runs, offsets, targets, 4, nullptr, chaos);
      ++returned;
      for (std::size_t j = 0; j < targets.size(); ++j) {
        std::size_t sum = 0;
        for (std::size_t s = 0; s < k; ++s) {
          EXPECT_LE(splits[j][s], runs[s].size());
          if (j > 0) EXPECT_GE(splits[j][s], splits[j - 1][s]);
          sum += splits[j][s];
        }
        EXPECT_EQ(sum, targets[j]);
      }
    } catch (const std::invalid_argument& e) {
      ++threw;
      EXPECT_NE(std::string(e.what()).find("not a strict weak order"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(threw, 0);
  EXPECT_EQ(threw + returned, 300);
}

TEST(Splitters, BadTargetsAndCountsAreRefused) {
  EXPECT_THROW(mgd::exact_splitting({3, 4}, {5, 2}, 8), std::invalid_argument);
  EXPECT_THROW(mgd::exact_splitting({3, 4}, {8}, 8), std::invalid_argument);
  mgd::exact_splitting s({3, 4}, {3}, 8);
  ASSERT_FALSE(s.done());
  s.plan_round();
  EXPECT_EQ(s.candidates().size(), 7u);
  EXPECT_EQ(s.positions(1).size(), 4u);
  EXPECT_THROW(s.absorb({{0}}), std::invalid_argument);
  EXPECT_THROW(s.absorb({std::vector<std::size_t>(7, 0), std::vector<std::size_t>(6, 0)}), std::invalid_argument);
}

TEST(Splitters, CandidatesPerRunShrinkWithManyRuns) {
  EXPECT_EQ(mgd::candidates_per_run(0), 512u);
  EXPECT_EQ(mgd::candidates_per_run(1), 512u);
  EXPECT_EQ(mgd::candidates_per_run(8), 512u);
  EXPECT_EQ(mgd::candidates_per_run(16), 68u);
  EXPECT_EQ(mgd::candidates_per_run(64), 16u);
  EXPECT_EQ(mgd::candidates_per_run(1000), 16u);
  // Every run counts every candidate of a round: runs * (runs - 1) * runs counts per unit,
  // which stay within 2^18 until the floor of 16 candidates.
  for (std::size_t runs = 2; runs <= 256; ++runs) {
    const std::size_t c = mgd::candidates_per_run(runs);
    EXPECT_GE(c, 16u);
    EXPECT_LE(c, 512u);
    if (c > 16) EXPECT_LE(runs * runs * (runs - 1) * c, std::size_t{1} << 18) << runs << " runs";
  }
}

TEST(Splitters, CountsHandedOverAsOneStridedTableSplitTheSame) {
  std::mt19937 rng(7);
  for (const char* d : {"random", "all equal", "two values"})
    for (std::size_t k : {2u, 3u, 8u}) {
      SCOPED_TRACE(std::string(d) + ", " + std::to_string(k) + " runs");
      std::vector<std::vector<int>> runs;
      std::vector<std::size_t> offsets, targets;
      std::size_t total = 0;
      for (std::size_t r = 0; r < k; ++r) {
        runs.push_back(make_keys(d, 500 + 37 * r, rng));
        std::sort(runs.back().begin(), runs.back().end());
        offsets.push_back(total);
        total += runs.back().size();
        if (r > 0) targets.push_back(offsets.back());
      }
      std::size_t by_vectors = 0, by_table = 0;
      const auto want = search(runs, offsets, targets, 16, &by_vectors);
      EXPECT_EQ(search(runs, offsets, targets, 16, &by_table, std::less<int>{}, true), want);
      EXPECT_EQ(by_table, by_vectors);
      EXPECT_EQ(want, brute_force(runs, offsets, targets));
    }
  std::vector<std::size_t> sizes{3, 3};
  mgd::exact_splitting s(sizes, {3}, 4);
  s.plan_round();
  std::vector<std::size_t> narrow(2 * s.candidates().size(), 0);
  EXPECT_THROW(s.absorb(narrow.data(), s.candidates().size() - 1), std::invalid_argument);
}

}  // namespace
