// Team gather and scatter by global index under mpirun, against the host reference of the
// whole vectors that every rank builds for itself: maps and values on every pair of layouts,
// and out-of-range indices reported on every rank with nothing written.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/team/team_algorithms.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

double value_of(std::size_t i) { return 0.5 * static_cast<double>(i) - 3.0; }

// The same pseudo-random permutation of [0, n) on every rank.
std::vector<long long> permutation(std::size_t n) {
  std::vector<long long> p(n);
  std::iota(p.begin(), p.end(), 0LL);
  std::shuffle(p.begin(), p.end(), std::mt19937(static_cast<unsigned>(n) + 11u));
  return p;
}

template <class T>
mg::team_vector<T> from_host(const mg::team& t, const layout& l, const mg::device_group& g, const std::vector<T>& all) {
  return make<T>(t, l, g, [&](std::size_t i) { return all[i]; });
}

}  // namespace

TEST(TeamGather, GatherAndScatterAcrossLayouts) {
  mg::team t = world();
  const mg::device_group g = groups()[1];
  for (const layout& a : layouts())
    for (const layout& b : layouts()) {
      SCOPED_TRACE(describe(a, g) + ", data laid out as " + b.name);
      auto input = make<double>(t, b, g, value_of);
      const std::size_t n = input.size();
      mg::team_vector<long long> probe(t, a.local_size(t.rank(), t.size()), g);
      const std::size_t m = probe.size();
      // gather: m indices into the n inputs (with repeats), laid out as a.
      if (n > 0 || m == 0) {
        std::vector<long long> map(m);
        for (std::size_t i = 0; i < m; ++i) map[i] = static_cast<long long>((i * 7919u + 5u) % (n > 0 ? n : 1));
        auto map_v = from_host(t, a, g, map);
        mg::team_vector<double> out(t, map_v.local_size(), g);
        mg::gather(map_v, input, out);
        std::vector<double> expected(m);
        for (std::size_t i = 0; i < m; ++i) expected[i] = value_of(static_cast<std::size_t>(map[i]));
        EXPECT_EQ(mg::to_vector(out), expected);
      }
      // scatter: the n inputs (laid out as b) to a permutation of an output laid out as a.
      if (m == n) {
        const std::vector<long long> perm = permutation(n);
        auto map_v = from_host(t, b, g, perm);
        mg::team_vector<double> out(t, a.local_size(t.rank(), t.size()), g);
        mg::scatter(input, map_v, out);
        std::vector<double> expected(n);
        for (std::size_t i = 0; i < n; ++i) expected[static_cast<std::size_t>(perm[i])] = value_of(i);
        EXPECT_EQ(mg::to_vector(out), expected);
      }
    }
}

// One bad index on the last rank: std::out_of_range on every rank, naming it; the output
// keeps its elements and the team stays in step.
TEST(TeamGather, OutOfRangeIndicesThrowOnEveryRankAndWriteNothing) {
  mg::team t = world();
  const mg::device_group g = groups()[0];
  auto input = mg::team_vector<int>::block(t, 10 * static_cast<std::size_t>(t.size()), g);
  mg::iota(input, 0);
  for (long long bad : {-1LL, static_cast<long long>(input.size())}) {
    SCOPED_TRACE(bad);
    auto map = mg::team_vector<long long>::block(t, 4 * static_cast<std::size_t>(t.size()), g);
    mg::fill(map, 3LL);
    if (t.rank() == t.size() - 1) map.local().write(2, bad);
    mg::team_vector<int> out(t, map.local_size(), g);
    mg::fill(out, -7);
    try {
      mg::gather(map, input, out);
      ADD_FAILURE() << "gather: no exception";
    } catch (const std::out_of_range& e) {
      EXPECT_NE(std::string(e.what()).find("map[" + std::to_string(map.size() - 2) + "] = " + std::to_string(bad)),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(mg::count(out, -7), out.size());
    auto values = mg::team_vector<int>::block(t, map.size(), g);
    EXPECT_THROW(mg::scatter(values, map, input), std::out_of_range);
    EXPECT_EQ(mg::to_vector(input), [&] {
      std::vector<int> all(input.size());
      std::iota(all.begin(), all.end(), 0);
      return all;
    }());
  }
}

TEST(TeamGather, LayoutsThatDoNotMatchAreRejected) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::team t = world();
  const mg::device_group g = groups()[0];
  auto map = mg::team_vector<int>::block(t, 6, g);
  auto input = mg::team_vector<float>::block(t, 6, g);
  mg::team_vector<float> out(t, t.rank() == 0 ? 6 : 0, g);
  EXPECT_THROW(mg::gather(map, input, out), std::invalid_argument);
  EXPECT_THROW(mg::scatter(out, map, input), std::invalid_argument);
  EXPECT_EQ(mg::count(map, 0), 6u);  // still in step
}
