// dispatch_policy::graph: collectives captured into CUDA graphs and replayed. The value tests of
// every algorithm also run on graph groups (support.hpp's shapes); these tests check what is
// particular to replay: that identical calls replay (the counters say so), that what changes
// between calls (data, init, operands, output, result address, layout, the scratch's size)
// reaches the device, that several results can be pending at once, and that a capture that
// cannot proceed leaves nothing behind.
#include <multigpu/multigpu.hpp>
#include <multigpu/runtime/detail/graph_replay.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include "support.hpp"

#include <cuda/functional>

#include <atomic>
#include <numeric>
#include <thread>
#include <ranges>
#include <vector>

namespace {

using namespace test;

mg::detail::graph_replay::counters stats(const mg::device_group& g) {
  return mg::detail::executor_of(g).graphs()->stats();
}

std::vector<mg::device_group> graph_groups() {
  std::vector<mg::device_group> groups;
  groups.emplace_back(std::vector<int>{0}, mg::group_options{.dispatch = mg::dispatch_policy::graph});
  groups.emplace_back(std::vector<int>{0, 0, 0, 0}, mg::group_options{.dispatch = mg::dispatch_policy::graph});
  groups.emplace_back(std::vector<int>{0, 0, 0},
                      mg::group_options{.peers = mg::peer_policy::host_staged, .dispatch = mg::dispatch_policy::graph});
  return groups;
}

/// 1, 2, ..., n on the host, and their sum: the input of the replay tests.
struct counting {
  std::vector<long long> host;
  long long sum;
  explicit counting(std::size_t n) : host(n), sum(static_cast<long long>(n) * (static_cast<long long>(n) + 1) / 2) {
    std::iota(host.begin(), host.end(), 1);
  }
};

struct scaled {
  long long factor;
  __host__ __device__ long long operator()(long long x) const { return factor * x; }
};
struct above {
  long long threshold;
  __host__ __device__ bool operator()(long long x) const { return x > threshold; }
};

TEST(GraphReplay, IdenticalCallsReplayAndChangedValuesReachTheDevice) {
  for (const auto& g : graph_groups()) {
    SCOPED_TRACE(g.describe());
    const std::size_t n = 100003;
    const counting in(n);
    mg::distributed_vector<long long> x(in.host, g);
    const long long sum = in.sum;
    for (int i = 0; i < 4; ++i) EXPECT_EQ(mg::reduce(x), sum);
    const auto after_same = stats(g);
    EXPECT_GE(after_same.replays, 2u) << "four identical reductions should replay their graph";

    // Another init, another operator state, another input: each must be used.
    for (long long init : {5LL, -7LL, 5LL}) EXPECT_EQ(mg::reduce(x, init), sum + init);
    for (long long f : {2LL, 3LL, 2LL})
      EXPECT_EQ(mg::transform_reduce(x, 0LL, cuda::std::plus<>{}, scaled{f}), f * sum);
    for (long long t : {0LL, 50000LL, 100003LL})
      EXPECT_EQ(mg::count_if(x, above{t}), static_cast<std::size_t>(n - std::min<long long>(t, n)));
    mg::distributed_vector<long long> y(n, 2, g);
    EXPECT_EQ(mg::reduce(y), 2 * static_cast<long long>(n));
    EXPECT_EQ(mg::reduce(x), sum);
    EXPECT_EQ(mg::dot(x, y), 2 * sum);
    mg::distributed_vector<long long> z(n, 3, g);
    EXPECT_EQ(mg::dot(x, z), 3 * sum);
    EXPECT_EQ(*mg::max_element(x), static_cast<long long>(n));
    EXPECT_EQ(*mg::min_element(x), 1);
    EXPECT_EQ(mg::max_element(y) - y.begin(), 0);

    // The data changes under a replayed graph: it is read at run time.
    mg::fill(x, 1LL);
    EXPECT_EQ(mg::reduce(x), static_cast<long long>(n));
    // Another range of the same vector: other pieces, another graph.
    EXPECT_EQ(mg::reduce(x.begin() + 17, x.end() - 5, 0LL), static_cast<long long>(n - 22));
    EXPECT_EQ(mg::reduce(x.begin() + 17, x.end() - 5, 0LL), static_cast<long long>(n - 22));
    const auto after_all = stats(g);
    EXPECT_GT(after_all.replays, after_same.replays);
    EXPECT_GT(after_all.captures, after_same.captures);
  }
}

/// Every kind of call that states what its steps depend on replays when repeated as is: its
/// fingerprint is the same from call to call (no stray bytes in it), and the values still match
/// the host.
TEST(GraphReplay, EveryReplayableKindReplaysWhenRepeated) {
  for (const auto& g : graph_groups()) {
    SCOPED_TRACE(g.describe());
    const std::size_t n = 50021;
    const counting in(n);
    mg::distributed_vector<long long> x(in.host, g), y(n, 2, g), out(n, g);
    const long long sum = in.sum;
    std::vector<long long> inclusive(n), exclusive(n);
    std::inclusive_scan(in.host.begin(), in.host.end(), inclusive.begin());
    std::exclusive_scan(in.host.begin(), in.host.end(), exclusive.begin(), 9LL);
    const auto replays_of = [&](const char* what, auto&& call) {
      const std::uint64_t before = stats(g).replays;
      for (int i = 0; i < 4; ++i) call();
      // The first may run eagerly while the scratch grows, the next captures; the rest replay.
      EXPECT_GE(stats(g).replays - before, 2u) << what << ": four identical calls should replay";
    };
    replays_of("transform_reduce",
               [&] { EXPECT_EQ(mg::transform_reduce(x, 1LL, cuda::std::plus<>{}, scaled{3}), 3 * sum + 1); });
    replays_of("dot", [&] { EXPECT_EQ(mg::dot(x, y), 2 * sum); });
    replays_of("max_element", [&] { EXPECT_EQ(mg::max_element(x) - x.begin(), static_cast<std::ptrdiff_t>(n - 1)); });
    replays_of("inclusive_scan", [&] {
      mg::inclusive_scan(x, out);
      EXPECT_TRUE(same_elements(mg::to_vector(out), inclusive));
    });
    replays_of("exclusive_scan", [&] {
      mg::exclusive_scan(x, out, 9LL);
      EXPECT_TRUE(same_elements(mg::to_vector(out), exclusive));
    });
  }
}

TEST(GraphReplay, ScansReplayWithTheirOutputsAndInits) {
  for (const auto& g : graph_groups()) {
    SCOPED_TRACE(g.describe());
    for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{100003}}) {
      const auto host = random_vector<long long>(n);
      mg::distributed_vector<long long> x(host, g), a(n, g), b(n, g);
      for (int round = 0; round < 3; ++round) {
        const long long init = round == 1 ? 11 : -4;
        mg::inclusive_scan(x, a);
        mg::exclusive_scan(x, b, init);
        std::vector<long long> inclusive(n), exclusive(n);
        std::inclusive_scan(host.begin(), host.end(), inclusive.begin());
        std::exclusive_scan(host.begin(), host.end(), exclusive.begin(), init);
        EXPECT_TRUE(same_elements(mg::to_vector(a), inclusive)) << "n " << n << " round " << round;
        EXPECT_TRUE(same_elements(mg::to_vector(b), exclusive)) << "n " << n << " round " << round;
        // The other output, then in place: the output pointers change between calls.
        mg::inclusive_scan(x, b);
        EXPECT_TRUE(same_elements(mg::to_vector(b), inclusive));
      }
      mg::distributed_vector<long long> y = x;
      mg::inclusive_scan(y, y);
      std::vector<long long> inclusive(n);
      std::inclusive_scan(host.begin(), host.end(), inclusive.begin());
      EXPECT_TRUE(same_elements(mg::to_vector(y), inclusive));
    }
    EXPECT_GT(stats(g).replays, 0u);
  }
}

/// Replays back to back with no host wait, each result pending while the data changes: the
/// result address is rewritten per call, and the slots' streams keep their order around the
/// graph.
TEST(GraphReplay, PendingResultsOfReplayedGraphsStayApart) {
  for (const auto& g : graph_groups()) {
    SCOPED_TRACE(g.describe());
    const std::size_t n = 1 << 20;
    mg::distributed_vector<float> x(n, 1.0f, g), y(n, g);
    for (int i = 0; i < 3; ++i) (void)mg::reduce(x);  // captured, then replayed
    std::vector<mg::future<float>> pending;
    for (int i = 1; i <= 8; ++i) {
      mg::fill(x, static_cast<float>(i));
      pending.push_back(mg::reduce_async(x));
      mg::inclusive_scan(x, y);
      mg::transform(y, y, cuda::std::negate<>{});
    }
    for (int i = 1; i <= 8; ++i) EXPECT_EQ(pending[i - 1].get(), static_cast<float>(i) * n) << "call " << i;
    EXPECT_EQ(mg::to_vector(y).back(), -8.0f * n);
  }
}

/// 1 KiB elements: a reduction's init alone fills the call's fingerprint.
struct wide {
  double x[128];
};
struct wide_plus {  // not declared commutative: the order-keeping kernel, as for any user type
  __host__ __device__ wide operator()(const wide& a, const wide& b) const {
    wide sum;
    for (int j = 0; j < 128; ++j) sum.x[j] = a.x[j] + b.x[j];
    return sum;
  }
};

// A call whose values do not fit its fingerprint can never be shown to match a later one:
// it runs eagerly instead of being captured (and updated) every time for nothing.
TEST(GraphReplay, CallsWhoseValuesDoNotFitTheFingerprintRunEagerly) {
  for (const auto& g : graph_groups()) {
    SCOPED_TRACE(g.describe());
    const std::size_t n = 1000;
    std::vector<wide> host(n);
    double column = 0;  // the sum of i % 7 over the elements: x[j] sums to column + n * j
    for (std::size_t i = 0; i < n; ++i) {
      for (int j = 0; j < 128; ++j) host[i].x[j] = static_cast<double>(i % 7 + j);
      column += static_cast<double>(i % 7);
    }
    mg::distributed_vector<wide> v(host, g);
    const auto before = stats(g);
    for (int round = 0; round < 3; ++round) {
      wide init;
      for (int j = 0; j < 128; ++j) init.x[j] = round;
      const wide got = mg::reduce(v, init, wide_plus{});
      for (int j : {0, 1, 127})
        EXPECT_EQ(got.x[j], round + column + static_cast<double>(n) * j) << "round " << round << ", x[" << j << "]";
    }
    const auto after = stats(g);
    EXPECT_EQ(after.captures, before.captures) << "a call with an invalid fingerprint was captured";
    EXPECT_EQ(after.replays, before.replays);
    EXPECT_EQ(after.eager, before.eager + 3);
  }
}

/// A capture that would have to grow the scratch runs eagerly instead; a graph captured
/// before the scratch moved is captured again rather than replayed onto freed memory.
TEST(GraphReplay, ScratchGrowthRecapturesInsteadOfReplaying) {
  const mg::device_group g({0, 0}, {.dispatch = mg::dispatch_policy::graph});
  // 20000 doubles a slot: above the one-launch reduction's limit, so that the small graph's
  // CUB reduction names temporary storage in the scratch.
  static_assert(20000 > mg::detail::small_reduce_shape<double>::limit);
  mg::distributed_vector<double> small(40000, 0.5, g);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(mg::reduce(small), 20000.0);
  const auto before = stats(g);
  {
    // A multi-tile CUB reduction's temporary storage does not depend on its size, but a
    // scan's grows with its tiles: 2^24 doubles a slot need far more than the reduction, so
    // the scratch grows (the first call runs eagerly).
    const std::size_t n = std::size_t{1} << 25;
    mg::distributed_vector<double> large(n, 1.0, g);
    for (int i = 0; i < 2; ++i) {
      mg::fill(large, 1.0);
      mg::inclusive_scan(large, large);
      EXPECT_EQ(large[n / 2], static_cast<double>(n / 2 + 1)) << "call " << i;
      EXPECT_EQ(large[n - 1], static_cast<double>(n)) << "call " << i;
    }
    EXPECT_GT(stats(g).eager, before.eager);
  }
  const auto middle = stats(g);
  EXPECT_EQ(mg::reduce(small), 20000.0);
  EXPECT_GT(stats(g).captures, middle.captures) << "the small graph names memory from before the scratch grew";
  EXPECT_EQ(mg::reduce(small), 20000.0);
  EXPECT_GT(stats(g).replays, middle.replays);
}

/// An output that does not line up with the input goes through a temporary made for each call
/// (before the capture): its address may or may not repeat, and either way the scan is right.
TEST(GraphReplay, UnalignedOutputsGoThroughATemporaryPerCall) {
  const mg::device_group g({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph});
  const std::size_t n = 30011;
  const auto host = random_vector<int>(n);
  mg::distributed_vector<int> x(host, g);
  const std::vector<std::size_t> sizes{n, 0, 0};
  mg::distributed_vector<int> out(g, mg::distribution::from_sizes(sizes));
  std::vector<int> want(n);
  std::inclusive_scan(host.begin(), host.end(), want.begin());
  for (int i = 0; i < 3; ++i) {
    mg::inclusive_scan(x, out);
    EXPECT_TRUE(same_elements(mg::to_vector(out), want));
  }
}

/// The first scan on a fresh graph group runs eagerly (its scratch grows first) and leaves the
/// slots that read the root's carries for the next call on that root to wait for. A collective
/// rooted on another slot is then captured, recording those slots' events in the capture; the
/// next calls rooted on the first slot wait for them, which must be waits on real work.
TEST(GraphReplay, CollectivesOnAnotherRootAfterAnEagerScan) {
  const mg::device_group g({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph});
  const std::size_t n = 30000;  // 10000 per slot
  const auto host = random_vector<long long>(n);
  mg::distributed_vector<long long> x(host, g), y(n, g);
  std::vector<long long> want(n);
  std::inclusive_scan(host.begin(), host.end(), want.begin());
  const long long total = std::reduce(host.begin(), host.end(), 0LL);
  const long long tail = std::reduce(host.begin() + 15000, host.end(), 0LL);
  for (int round = 0; round < 3; ++round) {
    mg::inclusive_scan(x, y);  // rooted on slot 0; slots 1 and 2 read its carries
    if (round == 0) EXPECT_GT(stats(g).eager, 0u) << "the first scan should have run eagerly";
    EXPECT_EQ(mg::reduce(x.begin() + 15000, x.end(), 0LL), tail);  // rooted on slot 1
    EXPECT_EQ(mg::reduce(x), total);                                // rooted on slot 0 again
    mg::exclusive_scan(x, y, 0LL);
    mg::inclusive_scan(x, y);
    EXPECT_TRUE(same_elements(mg::to_vector(y), want)) << "round " << round;
  }
}

/// Several host threads share a graph group: collectives capture and replay in turn, and an
/// element-wise call of another thread never lands in a capture (it runs on the slots' own
/// streams, never the capture streams).
TEST(GraphReplay, OtherThreadsKeepTheirOwnStreams) {
  const mg::device_group g({0, 0, 0}, {.dispatch = mg::dispatch_policy::graph});
  const std::size_t n = 1 << 18;
  mg::distributed_vector<int> a(n, 1, g), b(n, 0, g);
  std::atomic<int> failures{0};
  std::thread other([&] {
    for (int i = 0; i < 200; ++i) {
      mg::fill(b, i);
      if (mg::to_vector(b)[n / 2] != i) ++failures;
    }
  });
  for (int i = 0; i < 200; ++i)
    if (mg::reduce(a) != static_cast<int>(n)) ++failures;
  other.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(stats(g).replays, 0u);
}

}  // namespace
