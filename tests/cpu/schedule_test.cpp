// The critical path of a recorded schedule: a pure function of the graph.
#include <multigpu/testing/schedule.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace mg = multigpu;

namespace {

cudaStream_t stream_id(std::size_t i) { return reinterpret_cast<cudaStream_t>(i + 1); }

// k slots: a local step on each, then a fold on slot 0 that waits for all of them.
mg::testing::schedule_graph fork_join(std::size_t k) {
  mg::testing::schedule_graph g;
  for (std::size_t s = 0; s < k; ++s) g.nodes.push_back({stream_id(s), "step"});
  g.nodes.push_back({stream_id(0), "fold"});
  for (std::size_t s = 0; s < k; ++s) g.edges.emplace_back(s, k);
  return g;
}

// k slots whose steps each wait for the previous slot's: what a merge that orders every
// slot after the root's tail produces.
mg::testing::schedule_graph chain(std::size_t k) {
  mg::testing::schedule_graph g = fork_join(k);
  for (std::size_t s = 1; s < k; ++s) g.edges.emplace_back(s - 1, s);
  return g;
}

}  // namespace

TEST(CriticalPath, EmptyGraphHasLengthZero) { EXPECT_EQ(mg::testing::critical_path({}), 0u); }

TEST(CriticalPath, SingleNodeHasLengthOne) {
  mg::testing::schedule_graph g;
  g.nodes.push_back({stream_id(0), "step"});
  EXPECT_EQ(mg::testing::critical_path(g), 1u);
}

TEST(CriticalPath, ForkJoinIsConstantInTheNumberOfSlots) {
  for (std::size_t k : {1u, 2u, 4u, 8u, 64u}) EXPECT_EQ(mg::testing::critical_path(fork_join(k)), 2u) << k;
}

TEST(CriticalPath, ChainGrowsWithTheNumberOfSlots) {
  for (std::size_t k : {1u, 2u, 4u, 8u}) EXPECT_EQ(mg::testing::critical_path(chain(k)), k + 1) << k;
}

TEST(CriticalPath, TakesTheLongestOfSeveralBranches) {
  mg::testing::schedule_graph g;
  for (int i = 0; i < 6; ++i) g.nodes.push_back({stream_id(0), "n"});
  // 0 -> 1 -> 2 -> 5 and 0 -> 3 -> 5 and 4 alone.
  g.edges = {{0, 1}, {1, 2}, {2, 5}, {0, 3}, {3, 5}};
  EXPECT_EQ(mg::testing::critical_path(g), 4u);
}

TEST(CriticalPath, DuplicateEdgesDoNotLengthenThePath) {
  mg::testing::schedule_graph g = fork_join(3);
  g.edges.emplace_back(0, 3);
  g.edges.emplace_back(0, 3);
  EXPECT_EQ(mg::testing::critical_path(g), 2u);
}

TEST(CriticalPath, RejectsACycle) {
  mg::testing::schedule_graph g;
  g.nodes = {{stream_id(0), "a"}, {stream_id(1), "b"}};
  g.edges = {{0, 1}, {1, 0}};
  EXPECT_THROW((void)mg::testing::critical_path(g), std::invalid_argument);
}

TEST(CriticalPath, RejectsAnEdgeToAMissingNode) {
  mg::testing::schedule_graph g = fork_join(2);
  g.edges.emplace_back(0, 7);
  EXPECT_THROW((void)mg::testing::critical_path(g), std::invalid_argument);
}

TEST(ScheduleGraph, CountsLabelsAndStreams) {
  mg::testing::schedule_graph g = fork_join(4);
  EXPECT_EQ(g.count("step"), 4u);
  EXPECT_EQ(g.count("fold"), 1u);
  EXPECT_EQ(g.streams(), 4u);
}

// The recorder turns stream order and event waits into edges, with no GPU involved: the
// hooks take opaque handles.
TEST(ScheduleRecording, StreamOrderAndEventWaitsBecomeEdges) {
  mg::testing::schedule_recording rec;
  auto a = stream_id(10), b = stream_id(11);
  auto e = reinterpret_cast<cudaEvent_t>(0x99);
  mg::detail::observe_work(a, "a1");
  mg::detail::observe_record(e, a);
  mg::detail::observe_work(a, "a2");
  mg::detail::observe_work(b, "b1");  // independent of a
  mg::detail::observe_wait(b, e);     // b now follows a1 only
  mg::detail::observe_work(b, "b2");
  const auto g = rec.graph();
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(mg::testing::critical_path(g), 2u);  // a1 -> a2, b1 -> b2 and a1 -> b2: no chain of three
  bool a1_to_b2 = false, a2_to_b2 = false;
  for (auto [from, to] : g.edges) {
    a1_to_b2 = a1_to_b2 || (from == 0 && to == 3);
    a2_to_b2 = a2_to_b2 || (from == 1 && to == 3);
  }
  EXPECT_TRUE(a1_to_b2);
  EXPECT_FALSE(a2_to_b2);
}

TEST(ScheduleRecording, OnlyOneRecordingAtATime) {
  mg::testing::schedule_recording rec;
  EXPECT_THROW(mg::testing::schedule_recording{}, std::logic_error);
}

TEST(ScheduleRecording, NothingIsRecordedWhenNoRecordingIsAlive) {
  mg::detail::observe_work(stream_id(1), "x");
  mg::testing::schedule_recording rec;
  EXPECT_EQ(rec.graph().nodes.size(), 0u);
}
