// device_group set-up and teardown, streams, events and the current-device guard.
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/event.hpp>
#include <multigpu/core/stream.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/testing/group_hooks.hpp>

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <thread>

namespace mg = multigpu;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(DeviceGroup, SlotsHaveTheirOwnStreams) {
  for (auto options : {mg::group_options{}, mg::group_options{mg::peer_policy::host_staged}}) {
    mg::device_group g({0, 0, 0}, options);
    ASSERT_EQ(g.size(), 3u);
    std::set<cudaStream_t> streams;
    for (std::size_t s = 0; s < 3; ++s) {
      EXPECT_EQ(g.device(s), 0);
      streams.insert(g.stream(s));
    }
    EXPECT_EQ(streams.size(), 3u) << "each repetition of a device is its own slot with its own stream";
    const bool staged = options.peers == mg::peer_policy::host_staged;
    EXPECT_EQ(g.route_between(0, 1).kind, staged ? mg::route::host_staged : mg::route::same_device);
    EXPECT_FALSE(g.peer_enabled(0, 1));
    EXPECT_EQ(g.merge(), staged ? mg::merge_route::host_mapped : mg::merge_route::device);
    EXPECT_EQ(g.merge(mg::merge_kind::scan), mg::merge_route::host_mapped);
  }
}

TEST(DeviceGroup, AllHasOneSlotPerVisibleDevice) {
  mg::device_group g = mg::device_group::all();
  ASSERT_EQ(static_cast<int>(g.size()), mg::visible_device_count());
  for (std::size_t s = 0; s < g.size(); ++s) EXPECT_EQ(g.device(s), static_cast<int>(s));
}

TEST(DeviceGroup, InvalidIdsAreRejectedWithTheIdAndTheCount) {
  const int count = mg::visible_device_count();
  for (int bad : {-1, count, count + 7}) {
    try {
      mg::device_group g({0, bad});
      FAIL() << "expected std::invalid_argument for id " << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(contains(e.what(), "device id " + std::to_string(bad))) << e.what();
      EXPECT_TRUE(contains(e.what(), std::to_string(count) + " device(s) are visible")) << e.what();
    }
  }
  EXPECT_THROW(mg::device_group(std::vector<int>{}), std::invalid_argument);
  // The failed constructions left nothing behind: a new group still works.
  mg::device_group ok({0});
  EXPECT_EQ(ok.size(), 1u);
}

TEST(DeviceGroup, DescribeReportsDevicesLinksAndPools) {
  mg::device_group g({0, 0});
  std::string report = g.describe();
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_TRUE(contains(report, "slot 0: device 0")) << report;
  EXPECT_TRUE(contains(report, "slot 1: device 0")) << report;
  EXPECT_TRUE(contains(report, prop.name)) << report;
  EXPECT_TRUE(contains(report, "compute capability " + std::to_string(prop.major) + "." + std::to_string(prop.minor)))
      << report;
  EXPECT_TRUE(contains(report, "pool of device 0")) << report;
  if (mg::visible_device_count() > 1) {
    std::string all = mg::device_group::all().describe();
    EXPECT_TRUE(contains(all, "peer links")) << all;
  }
}

TEST(DeviceGroup, PeerMatrixFollowsTheDriver) {
  mg::device_group g = mg::device_group::all();
  for (std::size_t a = 0; a < g.size(); ++a)
    for (std::size_t b = 0; b < g.size(); ++b) {
      if (a == b) continue;
      int can = 0;
      ASSERT_EQ(cudaDeviceCanAccessPeer(&can, g.device(a), g.device(b)), cudaSuccess);
      const auto& link = mg::detail::resources_of(g).links().at(g.device(a), g.device(b));
      EXPECT_EQ(link.can_access, can != 0) << a << " -> " << b;
      if (can) {
        EXPECT_TRUE(link.enabled) << a << " -> " << b;
        EXPECT_TRUE(link.verified) << a << " -> " << b << ": the data check failed";
      }
    }
  mg::device_group staged = mg::device_group::all({mg::peer_policy::host_staged});
  for (std::size_t a = 0; a < staged.size(); ++a)
    for (std::size_t b = 0; b < staged.size(); ++b)
      if (a != b) EXPECT_FALSE(staged.peer_enabled(a, b));
}

TEST(DeviceGroup, FailedPeerCheckDemotesThePairToTheHost) {
  if (mg::visible_device_count() < 2) GTEST_SKIP() << "needs two GPUs: one is visible";
  int can = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  if (!can) GTEST_SKIP() << "devices 0 and 1 have no peer link";
  mg::testing::fail_peer_verification(0, 1);
  mg::device_group g({0, 1});
  mg::testing::fail_peer_verification(0, 1, false);
  EXPECT_FALSE(mg::detail::resources_of(g).links().at(0, 1).verified);
  EXPECT_TRUE(contains(g.describe(), "failed its data check")) << g.describe();
  EXPECT_NE(g.route_between(1, 0), (mg::copy_route{mg::route::peer, true}));
}

TEST(DeviceGroup, AConstructorThatThrowsGivesPeerAccessAndMemoryBack) {
  // One device: the failure is clean and the next construction works.
  mg::testing::fail_group_constructions(1);
  EXPECT_THROW(mg::device_group({0, 0}), std::runtime_error);
  mg::device_group one({0, 0});
  EXPECT_EQ(one.size(), 2u);
  if (mg::visible_device_count() < 2) GTEST_SKIP() << "peer access needs two GPUs";
  int can01 = 0, can10 = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can01, 0, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can10, 1, 0), cudaSuccess);
  if (!can01 && !can10) GTEST_SKIP() << "devices 0 and 1 have no peer access to give back";
  // Other groups of this binary may hold the pairs already: compare with that.
  const int held01 = mg::testing::peer_access_holders(0, 1), held10 = mg::testing::peer_access_holders(1, 0);
  {
    mg::device_group both({0, 1});
    EXPECT_GE(mg::testing::peer_access_holders(0, 1) + mg::testing::peer_access_holders(1, 0), held01 + held10 + 1)
        << "a group on devices 0 and 1 enabled no peer access, so this test cannot see a leak";
  }
  EXPECT_EQ(mg::testing::peer_access_holders(0, 1), held01);
  EXPECT_EQ(mg::testing::peer_access_holders(1, 0), held10);
  for (auto options : {mg::group_options{}, mg::group_options{.dispatch = mg::dispatch_policy::worker_threads}}) {
    mg::testing::fail_group_constructions(1);
    EXPECT_THROW(mg::device_group({0, 1}, options), std::runtime_error);
    EXPECT_EQ(mg::testing::peer_access_holders(0, 1), held01) << "the failed constructor kept its peer access";
    EXPECT_EQ(mg::testing::peer_access_holders(1, 0), held10) << "the failed constructor kept its peer access";
  }
  mg::testing::fail_group_constructions(0);
  mg::device_group again({0, 1});
  EXPECT_EQ(again.size(), 2u);
}

TEST(DeviceGroup, HandlesShareStateAndKeepItAlive) {
  mg::device_group copy = [] {
    mg::device_group g({0, 0});
    return mg::device_group(g);
  }();
  EXPECT_EQ(copy.size(), 2u);
  EXPECT_EQ(copy, mg::device_group(copy));
  EXPECT_FALSE(copy == mg::device_group({0, 0}));
  copy.synchronize();
}

TEST(DeviceGroup, DefaultGroupIsCreatedOnceAcrossThreads) {
  std::vector<mg::device_group> seen(8, mg::device_group({0}));
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = mg::default_group(); });
  for (auto& t : threads) t.join();
  for (const auto& g : seen) EXPECT_EQ(g, mg::default_group());
}

TEST(DeviceGroup, OrderMakesOneSlotWaitForAnother) {
  mg::device_group g({0, 0});
  auto& pool = g.pool(0);
  constexpr std::size_t n = 1 << 24;
  auto* a = static_cast<unsigned char*>(pool.allocate(n, g.stream(0)));
  auto* b = static_cast<unsigned char*>(pool.allocate(n, g.stream(0)));
  g.order(0, 1);
  std::vector<unsigned char> host(n, 0);
  ASSERT_EQ(cudaMemsetAsync(a, 7, n, g.stream(0)), cudaSuccess);
  g.order(0, 1);
  ASSERT_EQ(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, g.stream(1)), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), b, n, cudaMemcpyDeviceToHost, g.stream(1)), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(g.stream(1)), cudaSuccess);
  g.order(1, 0);
  pool.deallocate(a, g.stream(0));
  pool.deallocate(b, g.stream(0));
  EXPECT_EQ(std::count(host.begin(), host.end(), 7), static_cast<long>(n));
  g.synchronize();
}

TEST(DeviceGuard, RestoresTheDeviceAndEachThreadStartsOnDeviceZero) {
  const int last = mg::visible_device_count() - 1;
  ASSERT_EQ(cudaSetDevice(last), cudaSuccess);
  std::thread([&] {
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, 0) << "a new host thread starts on device 0";
    {
      mg::device_guard guard(last);
      ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
      EXPECT_EQ(current, last);
    }
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, 0);
  }).join();
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, last) << "other threads do not change this thread's device";
  {
    mg::device_guard guard(0);
    mg::device_group g({0, 0});  // set-up switches devices internally
  }
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  EXPECT_EQ(current, last);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
}

TEST(StreamsAndEvents, RecordWaitAndTime) {
  mg::stream s(0), t(0);
  mg::event start(0, cudaEventDefault), stop(0, cudaEventDefault), handoff(0);
  start.record(s.get());
  handoff.record(s.get());
  handoff.order_before(t.get());
  stop.record(t.get());
  stop.synchronize();
  EXPECT_TRUE(stop.ready());
  EXPECT_GE(mg::event::elapsed_ms(start, stop), 0.0f);
  mg::stream moved = std::move(s);
  EXPECT_NE(moved.get(), nullptr);
  EXPECT_EQ(s.get(), nullptr);
}
