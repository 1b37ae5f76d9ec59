// Team copy_if, remove_copy_if, rebalance and copy under mpirun, against the host reference of
// the whole vector that every rank builds for itself: on every named layout, with one and two
// local slots.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/team/team_algorithms.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

int value_of(std::size_t i) { return static_cast<int>((i * 7919u + 3u) % 1000u); }

struct below {
  int bound;
  __host__ __device__ bool operator()(int x) const { return x < bound; }
};

}  // namespace

// Each rank keeps its own survivors: the result's rank layout is the survivors per rank, and
// the whole is std::copy_if's; then rebalance spreads it in even blocks.
TEST(TeamSelect, CopyIfKeepsEachRanksSurvivorsAndRebalanceEvensThem) {
  mg::team t = world();
  for (const mg::device_group& g : groups())
    for (const layout& l : layouts())
      for (int bound : {0, 300, 1000}) {
        SCOPED_TRACE(describe(l, g) + ", below " + std::to_string(bound));
        auto v = make<int>(t, l, g, value_of);
        const std::vector<int> all = reference<int>(v.size(), value_of);
        auto kept = mg::copy_if(v, below{bound});
        auto dropped = mg::remove_copy_if(v, below{bound});
        std::vector<int> want, rest;
        std::copy_if(all.begin(), all.end(), std::back_inserter(want), below{bound});
        std::remove_copy_if(all.begin(), all.end(), std::back_inserter(rest), below{bound});
        EXPECT_EQ(mg::to_vector(kept), want);
        EXPECT_EQ(mg::to_vector(dropped), rest);
        for (int r = 0; r < t.size(); ++r) {
          const std::size_t first = v.layout().segment_offset(static_cast<std::size_t>(r));
          const std::size_t n = v.layout().segment_size(static_cast<std::size_t>(r));
          const auto survivors = static_cast<std::size_t>(
              std::count_if(all.begin() + first, all.begin() + first + n, below{bound}));
          EXPECT_EQ(kept.layout().segment_size(static_cast<std::size_t>(r)), survivors) << "rank " << r;
        }
        EXPECT_EQ(kept.local_size(), kept.layout().segment_size(static_cast<std::size_t>(t.rank())));
        EXPECT_EQ(kept.local().group(), g);

        auto even = mg::rebalance(kept);
        EXPECT_EQ(even.layout(), mg::distribution::block(want.size(), static_cast<std::size_t>(t.size())));
        EXPECT_EQ(mg::to_vector(even), want);
        // The result is a full team_vector: a collective on it works.
        EXPECT_EQ(mg::count_if(kept, below{bound}), want.size());
      }
}

// copy between team vectors: of the same layout (local, on each rank) and of another layout
// (redistributed); other sizes are rejected on every rank.
TEST(TeamSelect, CopyBetweenLayouts) {
  mg::team t = world();
  const mg::device_group g = groups()[1];
  for (const layout& l : layouts()) {
    SCOPED_TRACE(describe(l, g));
    auto v = make<int>(t, l, g, value_of);
    const std::vector<int> all = reference<int>(v.size(), value_of);
    mg::team_vector<int> same(t, v.local_size(), groups()[0]);
    mg::copy(v, same);
    EXPECT_EQ(mg::to_vector(same), all);
    auto blocks = mg::team_vector<int>::block(t, v.size(), g);
    mg::copy(v, blocks);
    EXPECT_EQ(mg::to_vector(blocks), all);
    auto larger = mg::team_vector<int>::block(t, v.size() + 1, g);
    EXPECT_THROW(mg::copy(v, larger), std::invalid_argument);
  }
}
