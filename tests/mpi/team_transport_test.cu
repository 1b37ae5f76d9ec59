// A user's own transport under the team algorithms: a communicator that provides only what
// the concept requires (send_recv_bytes, here forwarded to MPI point-to-point calls), so that
// every collective the team algorithms use (all_gather, all_reduce, all_to_all_v, barrier)
// runs through the communicator's fallbacks. Results are checked against host references of
// the whole global vector, as in the other team tests.

#include "support.hpp"
#include "team_support.hpp"

#include <multigpu/comm.hpp>
#include <multigpu/team/team_algorithms.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

/// rank, size, engine and send_recv_bytes; every collective is the fallback.
class point_to_point_only final : public mg::communicator {
 public:
  point_to_point_only() : inner_(std::make_shared<mg::mpi_communicator>()) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const char* engine() const noexcept override { return "point-to-point"; }
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t stream) override {
    ++messages;
    inner_->send_recv_bytes(send, send_bytes, send_to, recv, recv_bytes, recv_from, stream);
  }
  long messages = 0;

 private:
  std::shared_ptr<mg::mpi_communicator> inner_;
};

int value_of(std::size_t i) { return static_cast<int>((i * 2654435761u) % 2001u) - 1000; }
std::uint64_t position(std::size_t i) { return i; }
struct below {
  int bound;
  __host__ __device__ bool operator()(int x) const { return x < bound; }
};

}  // namespace

TEST(TeamTransport, EveryTeamAlgorithmRunsOnSendRecvAlone) {
  auto transport = std::make_shared<point_to_point_only>();
  mg::team t(transport);
  for (const layout& l : layouts())
    for (const mg::device_group& g : groups()) {
      SCOPED_TRACE(describe(l, g) + ", over send_recv only");
      auto v = make<int>(t, l, g, value_of);
      const std::vector<int> host = reference<int>(v.size(), value_of);

      // Reductions, extrema and counts: all_gather and all_reduce fallbacks.
      EXPECT_EQ(mg::reduce(v, 0LL, cuda::std::plus<>{}), std::accumulate(host.begin(), host.end(), 0LL));
      EXPECT_EQ(mg::count_if(v, below{0}), static_cast<std::size_t>(std::count_if(host.begin(), host.end(), below{0})));
      const auto smallest = mg::min_element(v);
      ASSERT_EQ(smallest.has_value(), !host.empty());
      if (smallest) {
        const auto at = std::min_element(host.begin(), host.end());
        EXPECT_EQ(smallest->index, static_cast<std::size_t>(at - host.begin()));
        EXPECT_EQ(smallest->value, *at);
      }

      // A scan carries across ranks.
      mg::team_vector<int> scanned(t, v.local_size(), g);
      mg::inclusive_scan(v, scanned);
      std::vector<int> want_scan(host.size());
      std::inclusive_scan(host.begin(), host.end(), want_scan.begin());
      EXPECT_EQ(mg::to_vector(scanned), want_scan);

      // Sort by key: splitters through all_gather, the exchange through all_to_all_v.
      auto keys = make<int>(t, l, g, value_of);
      auto values = make<std::uint64_t>(t, l, g, position);
      mg::sort_by_key(keys, values);
      std::vector<std::uint64_t> order(host.size());
      std::iota(order.begin(), order.end(), std::uint64_t{0});
      std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return host[a] < host[b]; });
      std::vector<int> sorted(host.size());
      for (std::size_t i = 0; i < order.size(); ++i) sorted[i] = host[order[i]];
      EXPECT_EQ(mg::to_vector(keys), sorted);
      EXPECT_EQ(mg::to_vector(values), order);

      // A filter, then rebalancing (all_to_all_v between layouts).
      auto kept = mg::copy_if(v, below{0});
      std::vector<int> want_kept;
      std::copy_if(host.begin(), host.end(), std::back_inserter(want_kept), below{0});
      EXPECT_EQ(mg::to_vector(mg::rebalance(kept)), want_kept);
    }
  if (t.size() > 1) EXPECT_GT(transport->messages, 0) << "the collectives went through send_recv_bytes";
}

TEST(TeamTransport, MismatchedCollectivesAreStillDetected) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  expect_mismatch_detected(mg::team(std::make_shared<point_to_point_only>()));
}
