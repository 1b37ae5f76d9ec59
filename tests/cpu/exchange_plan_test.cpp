// The exchange plans behind sort, gather and scatter: offsets, transposition and relayout.
#include <multigpu/algorithm/detail/collective/all_to_all.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include <stdexcept>

namespace {

using multigpu::detail::exchange_plan;

exchange_plan three_by_three() {
  exchange_plan p(3);
  const std::size_t counts[3][3] = {{1, 2, 0}, {4, 0, 3}, {0, 5, 6}};
  for (std::size_t s = 0; s < 3; ++s)
    for (std::size_t d = 0; d < 3; ++d) p.count(s, d) = counts[s][d];
  return p;
}

TEST(ExchangePlan, OffsetsAreRunsBackToBack) {
  const exchange_plan p = three_by_three();
  EXPECT_EQ(p.send_offset(1, 0), 0u);
  EXPECT_EQ(p.send_offset(1, 2), 4u);
  EXPECT_EQ(p.sent(1), 7u);
  EXPECT_EQ(p.receive_offset(0, 1), 0u);
  EXPECT_EQ(p.receive_offset(2, 1), 2u);  // after 2 from slot 0 and 0 from slot 1
  EXPECT_EQ(p.received(1), 7u);
  EXPECT_EQ(p.received(2), 9u);
}

TEST(ExchangePlan, TransposedSendsEverythingBack) {
  const exchange_plan p = three_by_three();
  const exchange_plan t = p.transposed();
  for (std::size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(t.sent(s), p.received(s));
    EXPECT_EQ(t.received(s), p.sent(s));
    for (std::size_t d = 0; d < 3; ++d) {
      EXPECT_EQ(t.count(d, s), p.count(s, d));
      // What d received from s sits where d sends it back from.
      EXPECT_EQ(t.send_offset(d, s), p.receive_offset(s, d));
      EXPECT_EQ(t.receive_offset(d, s), p.send_offset(s, d));
    }
  }
}

TEST(ExchangePlan, RelayoutMovesOverlaps) {
  const std::size_t from[] = {5, 0, 3};
  const std::size_t to[] = {3, 3, 2};
  const exchange_plan p = exchange_plan::relayout(from, to);
  // Global ranges: from [0,5) [5,5) [5,8); to [0,3) [3,6) [6,8).
  EXPECT_EQ(p.count(0, 0), 3u);
  EXPECT_EQ(p.count(0, 1), 2u);
  EXPECT_EQ(p.count(0, 2), 0u);
  EXPECT_EQ(p.count(1, 0) + p.count(1, 1) + p.count(1, 2), 0u);
  EXPECT_EQ(p.count(2, 1), 1u);
  EXPECT_EQ(p.count(2, 2), 2u);
  for (std::size_t d = 0; d < 3; ++d) EXPECT_EQ(p.received(d), to[d]);
  const std::size_t wrong[] = {3, 3, 3};
  EXPECT_THROW(exchange_plan::relayout(from, wrong), std::invalid_argument);
}

TEST(ExchangePlan, MovesSkipEmptyRunsAndUseByteOffsets) {
  const exchange_plan p = three_by_three();
  char send[3][16] = {}, receive[3][16] = {};
  const void* from[] = {send[0], send[1], send[2]};
  void* to[] = {receive[0], receive[1], receive[2]};
  const auto moves = p.moves(from, to, 2);
  ASSERT_EQ(moves.size(), 6u);  // nine pairs, three empty
  // Slot 2 sends 6 elements to slot 2: after its 5 for slot 1, after 0 + 3 received there.
  const auto& last = moves.back();
  EXPECT_EQ(last.src_slot, 2u);
  EXPECT_EQ(last.dst_slot, 2u);
  EXPECT_EQ(static_cast<const char*>(last.source), send[2] + 10);
  EXPECT_EQ(static_cast<char*>(last.destination), receive[2] + 6);
  EXPECT_EQ(last.bytes, 12u);
}

TEST(ExchangePlan, RelayoutRefusesSizesThatOverflow) {
  constexpr std::size_t max = std::numeric_limits<std::size_t>::max();
  const std::vector<std::size_t> from{max, 1};  // wraps to 0
  const std::vector<std::size_t> to{0, 0};
  EXPECT_THROW((void)exchange_plan::relayout(from, to), std::length_error);
}

}  // namespace
