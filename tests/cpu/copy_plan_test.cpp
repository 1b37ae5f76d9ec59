#include <multigpu/container/distribution.hpp>
#include <multigpu/transfer/chunking.hpp>
#include <multigpu/transfer/copy_plan.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include <map>
#include <stdexcept>

namespace mg = multigpu;
using mg::distribution;
using mg::transfer::chunk;
using mg::transfer::move;

namespace {

// Applies a plan to element labels and checks that every destination position receives
// the source element of the same rank: the independent meaning of "redistribute".
void expect_plan_moves_every_element(const distribution& src, std::size_t src_first, const distribution& dst,
                                     std::size_t dst_first, std::size_t count) {
  auto moves = mg::transfer::plan_moves(src.split(src_first, src_first + count), dst.split(dst_first, dst_first + count));
  std::map<std::pair<std::size_t, std::size_t>, std::size_t> received;  // (slot, local) -> source global index
  for (const move& m : moves) {
    ASSERT_GT(m.count, 0u);
    for (std::size_t i = 0; i < m.count; ++i) {
      auto key = std::pair{m.dst_slot, m.dst_offset + i};
      ASSERT_EQ(received.count(key), 0u) << "a destination element is written twice";
      received[key] = src.segment_offset(m.src_slot) + m.src_offset + i;
    }
  }
  ASSERT_EQ(received.size(), count);
  for (std::size_t r = 0; r < count; ++r) {
    auto at = dst.locate(dst_first + r);
    EXPECT_EQ(received.at({at.segment, at.local}), src_first + r) << "rank " << r;
  }
}

TEST(Chunking, HugePiecesAreCoveredExactlyNeitherDroppedNorLoopedOver) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> one{max};
  const std::vector<chunk> c = mg::transfer::interleave_chunks(one, std::size_t{1} << 62);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c.back().offset + c.back().bytes, max);
  const std::vector<std::size_t> two{max, 1};
  const std::vector<chunk> d = mg::transfer::interleave_chunks(two, std::size_t{1} << 62);
  std::size_t first_piece = 0;
  for (const chunk& x : d)
    if (x.piece == 0) first_piece += x.bytes;
  EXPECT_EQ(first_piece, max);
  const std::vector<chunk> e = mg::transfer::split_into_chunks(max, std::size_t{1} << 63);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].offset + e[1].bytes, max);
}

TEST(CopyPlan, TotalsThatOverflowAreRefused) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  const std::vector<mg::piece> source{{0, 0, max}, {1, 0, 2}};  // wraps to 1
  const std::vector<mg::piece> destination{{0, 0, 1}};
  EXPECT_THROW((void)mg::transfer::plan_moves(source, destination), std::length_error);
}

}  // namespace

TEST(CopyPlan, RedistributesBetweenLayouts) {
  for (std::size_t n : {0u, 1u, 2u, 7u, 100u, 1003u})
    for (std::size_t ks : {1u, 3u, 7u})
      for (std::size_t kd : {1u, 2u, 4u, 8u}) {
        SCOPED_TRACE(testing::Message() << "n=" << n << " ks=" << ks << " kd=" << kd);
        expect_plan_moves_every_element(distribution::block(n, ks), 0, distribution::block(n, kd), 0, n);
      }
}

TEST(CopyPlan, SubrangesAtDifferentOffsets) {
  distribution a = distribution::block(50, 3), b = distribution::block(40, 5);
  expect_plan_moves_every_element(a, 7, b, 3, 30);
  expect_plan_moves_every_element(a, 0, b, 10, 30);
  expect_plan_moves_every_element(a, 49, b, 39, 1);
}

TEST(CopyPlan, SameLayoutGivesOneMovePerSegment) {
  distribution d = distribution::block(10, 3);
  auto moves = mg::transfer::plan_moves(d.split(0, 10), d.split(0, 10));
  ASSERT_EQ(moves.size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(moves[s].src_slot, s);
    EXPECT_EQ(moves[s].dst_slot, s);
    EXPECT_EQ(moves[s].count, d.segment_size(s));
  }
}

TEST(CopyPlan, MismatchedTotalsAreRejected) {
  distribution d = distribution::block(10, 2);
  try {
    (void)mg::transfer::plan_moves(d.split(0, 5), d.split(0, 6));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("5"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("6"), std::string::npos);
  }
}

TEST(Chunking, SplitCoversBytesExactly) {
  EXPECT_TRUE(mg::transfer::split_into_chunks(0, 4).empty());
  auto chunks = mg::transfer::split_into_chunks(10, 4, 3);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0], (chunk{3, 0, 4}));
  EXPECT_EQ(chunks[1], (chunk{3, 4, 4}));
  EXPECT_EQ(chunks[2], (chunk{3, 8, 2}));
  EXPECT_THROW(mg::transfer::split_into_chunks(10, 0), std::invalid_argument);
}

TEST(Chunking, InterleavesPiecesRoundRobin) {
  std::vector<std::size_t> pieces{10, 0, 3, 9};
  auto chunks = mg::transfer::interleave_chunks(pieces, 4);
  std::vector<chunk> expected{{0, 0, 4}, {2, 0, 3}, {3, 0, 4}, {0, 4, 4}, {3, 4, 4}, {0, 8, 2}, {3, 8, 1}};
  EXPECT_EQ(chunks, expected);
  std::size_t total = 0;
  for (const auto& c : chunks) total += c.bytes;
  EXPECT_EQ(total, 22u);
}
