#include <multigpu/container/halo_plan.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace mg = multigpu;
using mg::distribution;
using mg::halo_move;

TEST(HaloPlan, NoWidthNoMoves) {
  EXPECT_TRUE(mg::plan_halo_exchange(distribution::block(10, 3), 0, true).empty());
}

TEST(HaloPlan, NeighboursFillEachOther) {
  // Segments of 4, 3, 3 elements; width 2.
  auto moves = mg::plan_halo_exchange(distribution::block(10, 3), 2, false);
  std::vector<halo_move> expected{
      {1, 0, 0, false, 2},  // segment 0's right halo: the first two of segment 1
      {0, 2, 1, true, 2},   // segment 1's left halo: the last two of segment 0
      {2, 0, 1, false, 2},
      {1, 1, 2, true, 2},
  };
  EXPECT_EQ(moves, expected);
}

TEST(HaloPlan, PeriodicWrapsAround) {
  auto moves = mg::plan_halo_exchange(distribution::block(10, 3), 1, true);
  EXPECT_EQ(moves.size(), 6u);
  EXPECT_EQ(moves.front(), (halo_move{2, 2, 0, true, 1}));  // segment 0's left: the last of segment 2
  EXPECT_EQ(moves.back(), (halo_move{0, 0, 2, false, 1}));  // segment 2's right: the first of segment 0
  auto single = mg::plan_halo_exchange(distribution::block(5, 1), 2, true);
  std::vector<halo_move> own{{0, 3, 0, true, 2}, {0, 0, 0, false, 2}};
  EXPECT_EQ(single, own);
  EXPECT_TRUE(mg::plan_halo_exchange(distribution::block(5, 1), 2, false).empty());
}

TEST(HaloPlan, EmptySegmentsAreSkipped) {
  // 2 elements over 5 segments: only segments 0 and 1 hold data.
  auto moves = mg::plan_halo_exchange(distribution::block(2, 5), 1, true);
  std::vector<halo_move> expected{{1, 0, 0, true, 1}, {1, 0, 0, false, 1}, {0, 0, 1, true, 1}, {0, 0, 1, false, 1}};
  EXPECT_EQ(moves, expected);
}

TEST(HaloPlan, SegmentsShorterThanTheWidthAreRejected) {
  try {
    (void)mg::plan_halo_exchange(distribution::block(7, 3), 3, false);  // 3, 2, 2
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("segment 1 holds 2 elements"), std::string::npos) << what;
    EXPECT_NE(what.find("halo width 3"), std::string::npos) << what;
  }
}
