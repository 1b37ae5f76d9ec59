#include <multigpu/runtime/topology.hpp>

#include <gtest/gtest.h>

#include <stdexcept>

namespace mg = multigpu;
using mg::copy_route;
using mg::peer_matrix;
using mg::peer_policy;
using mg::route;

namespace {
peer_matrix links_of(std::size_t n, std::initializer_list<std::pair<int, int>> usable) {
  peer_matrix m(n);
  for (auto [from, to] : usable) m.at(from, to) = {true, true, true};
  return m;
}
}  // namespace

TEST(Route, SameDeviceCopiesStayOnTheDevice) {
  peer_matrix m(2);
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 1, 1, m), (copy_route{route::same_device, true}));
}

TEST(Route, HostStagedPolicyForcesTheHostEvenOnOneDevice) {
  peer_matrix m = links_of(2, {{0, 1}, {1, 0}});
  EXPECT_EQ(mg::choose_route(peer_policy::host_staged, 0, 0, m).kind, route::host_staged);
  EXPECT_EQ(mg::choose_route(peer_policy::host_staged, 0, 1, m).kind, route::host_staged);
}

TEST(Route, SymmetricLinkIsPulledByTheDestination) {
  peer_matrix m = links_of(2, {{0, 1}, {1, 0}});
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 0, 1, m), (copy_route{route::peer, true}));
}

TEST(Route, AsymmetricLinkIsUsedFromTheSideThatHasIt) {
  // Only device 0 may access device 1.
  peer_matrix m = links_of(3, {{0, 1}});
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 1, 0, m), (copy_route{route::peer, true}));   // 0 pulls
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 0, 1, m), (copy_route{route::peer, false}));  // 0 pushes
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 0, 2, m).kind, route::host_staged);
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 2, 1, m).kind, route::host_staged);
}

TEST(Route, UnverifiedOrDisabledLinksGoThroughTheHost) {
  peer_matrix m(2);
  m.at(0, 1) = {true, true, false};  // failed its data check
  m.at(1, 0) = {true, false, false};  // supported, not enabled
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 0, 1, m).kind, route::host_staged);
  EXPECT_EQ(mg::choose_route(peer_policy::automatic, 1, 0, m).kind, route::host_staged);
}

TEST(Route, DevicesOutsideTheMatrixAreRejected) {
  peer_matrix m(2);
  EXPECT_THROW(mg::choose_route(peer_policy::automatic, 0, 5, m), std::out_of_range);
}

TEST(MergeRoute, DeviceRouteNeedsEverySlotToReachTheRoot) {
  using mg::merge_policy;
  using mg::merge_route;
  peer_matrix none(4);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::automatic, {0, 0, 0}, 0, none),
            merge_route::device);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::automatic, {0, 1}, 0, none),
            merge_route::host_mapped);
  peer_matrix both = links_of(4, {{0, 1}, {1, 0}, {0, 2}, {2, 0}});
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::automatic, {0, 1, 2}, 0, both),
            merge_route::device);
  peer_matrix one_way = links_of(4, {{1, 0}});
  EXPECT_EQ(mg::choose_merge_route(merge_policy::device, peer_policy::automatic, {0, 1}, 0, one_way),
            merge_route::host_mapped);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::host_mapped, peer_policy::automatic, {0, 0}, 0, none),
            merge_route::host_mapped);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::host_staged, {0, 0}, 0, none),
            merge_route::host_mapped);
}

TEST(MergeRoute, AutomaticPicksTheMeasuredFasterRoutePerKind) {
  using mg::merge_kind;
  using mg::merge_policy;
  using mg::merge_route;
  peer_matrix none(2);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::automatic, {0, 0, 0, 0}, 0, none,
                                   merge_kind::reduction),
            merge_route::device);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::automatic, peer_policy::automatic, {0, 0, 0, 0}, 0, none,
                                   merge_kind::scan),
            merge_route::host_mapped);
  EXPECT_EQ(mg::choose_merge_route(merge_policy::device, peer_policy::automatic, {0, 0, 0, 0}, 0, none,
                                   merge_kind::scan),
            merge_route::device);
}
