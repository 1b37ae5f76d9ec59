// Fault paths: running out of memory half-way through constructing a vector, a peer link
// that fails its data check, a user callback that throws in for_each_segment, and vectors
// (or whole groups) that go away while work on them is still running. Nothing may be lost
// or left half-done: memory returns to the pools, results stay right, groups stay usable.
#include <multigpu/multigpu.hpp>
#include <multigpu/testing/group_hooks.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace mg = multigpu;

template <class T>
__global__ void add_one(T* data, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] += T(1);
}

__device__ std::uint64_t now_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Spins for `nanoseconds`, then fills data[0, n) with `value` and sets *done: a kernel
/// still running long after the host has moved on.
template <class T>
__global__ void spin_then_fill(T* data, std::size_t n, T value, std::uint64_t nanoseconds, volatile int* done) {
  const std::uint64_t start = now_ns();
  while (now_ns() - start < nanoseconds) {
  }
  for (std::size_t i = threadIdx.x; i < n; i += blockDim.x) data[i] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence_system();
    *done = 1;
  }
}

/// for_each_segment callback: a slow kernel per segment that ends by writing `value` and
/// raising the segment's flag in mapped host memory.
template <class T>
struct slow_fill {
  T value;
  volatile int* flags;  // one per slot, in mapped host memory
  std::uint64_t nanoseconds = 200'000'000;
  void operator()(mg::segment_view<T> seg) const {
    spin_then_fill<<<1, 256, 0, seg.stream()>>>(seg.data(), seg.size(), value, nanoseconds, flags + seg.slot());
    if (cudaGetLastError() != cudaSuccess) throw std::logic_error("spin_then_fill did not launch");
  }
};

/// for_each_segment callback that adds one on every segment before `failing` and throws
/// on that one.
struct add_one_or_throw {
  std::size_t failing;
  int* calls;
  void operator()(mg::segment_view<int> seg) const {
    ++*calls;
    if (seg.slot() == failing) throw std::runtime_error("the user's callback failed on slot " + std::to_string(seg.slot()));
    add_one<<<64, 256, 0, seg.stream()>>>(seg.data(), seg.size());
    if (cudaGetLastError() != cudaSuccess) throw std::logic_error("add_one did not launch");
  }
};

struct add_one_everywhere {
  void operator()(mg::segment_view<int> seg) const { add_one<<<64, 256, 0, seg.stream()>>>(seg.data(), seg.size()); }
};

volatile int* mapped_flags(mg::pinned_buffer& buffer, std::size_t count) {
  auto* flags = static_cast<volatile int*>(buffer.data());
  for (std::size_t i = 0; i < count; ++i) flags[i] = 0;
  return flags;
}

// ---- out of memory in the middle of a construction ---------------------------------------

TEST(Faults, OutOfMemoryMidConstructionReleasesTheSegmentsAlreadyMade) {
  // Segments of 40% of the free memory fail at the third slot; of 30%, at the fourth.
  for (int percent : {40, 30}) {
    SCOPED_TRACE(testing::Message() << "segments of " << percent << "% of the free memory");
    mg::device_group g({0, 0, 0, 0});
    mg::device_pool& pool = g.pool(0);
    g.synchronize();
    const std::size_t used_before = pool.usage().used_bytes;
    std::size_t free_bytes = 0, total_bytes = 0;
    {
      mg::device_guard guard(0);
      ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
    }
    const std::size_t per_segment = free_bytes / 100 * static_cast<std::size_t>(percent) / sizeof(double);
    try {
      mg::distributed_vector<double> v(4 * per_segment, g);
      FAIL() << "four segments of " << per_segment * sizeof(double) << " bytes fitted in " << free_bytes
             << " free bytes";
    } catch (const mg::out_of_memory& e) {
      EXPECT_EQ(e.device(), 0);
      EXPECT_EQ(e.requested_bytes(), per_segment * sizeof(double));
      const std::string what = e.what();
      EXPECT_NE(what.find(std::to_string(per_segment * sizeof(double))), std::string::npos) << what;
    }
    EXPECT_EQ(cudaGetLastError(), cudaSuccess) << "the failure must not linger as the thread's last error";
    g.synchronize();
    EXPECT_EQ(pool.usage().used_bytes, used_before) << "segments allocated before the failure were not released";

    // The group stays usable, for as much memory as the failed vector had taken.
    {
      mg::distributed_vector<double> v(2 * per_segment, 1.0, g);
      EXPECT_EQ(mg::reduce(v), static_cast<double>(2 * per_segment));
      mg::distributed_vector<double> small(std::vector<double>{1.0, 2.0, 3.0, 4.0, 5.0}, g);
      mg::inclusive_scan(small, small);
      EXPECT_EQ(mg::to_vector(small), (std::vector<double>{1.0, 3.0, 6.0, 10.0, 15.0}));
    }
    g.synchronize();
    EXPECT_EQ(pool.usage().used_bytes, used_before);
    pool.trim(0);  // give the memory back for the tests that follow
  }
}

TEST(Faults, OutOfMemoryInACopyLeavesTheTargetAsItWas) {
  // Copy construction and assignment allocate the whole target first: a failure leaves the
  // target (for assignment) untouched and the pool as it was.
  mg::device_group g({0, 0});
  mg::device_pool& pool = g.pool(0);
  std::size_t free_bytes = 0, total_bytes = 0;
  {
    mg::device_guard guard(0);
    ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  }
  // 60% of the free memory: it fits once, not twice.
  const std::size_t n = free_bytes / 10 * 6 / sizeof(float);
  mg::distributed_vector<float> big(n, 2.0f, g);
  mg::distributed_vector<float> target(std::vector<float>{1, 2, 3}, g);
  g.synchronize();
  const std::size_t used = pool.usage().used_bytes;
  EXPECT_THROW(target = big, mg::out_of_memory);
  EXPECT_THROW({ mg::distributed_vector<float> copy(big); }, mg::out_of_memory);
  g.synchronize();
  EXPECT_EQ(pool.usage().used_bytes, used);
  EXPECT_EQ(mg::to_vector(target), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(mg::count(big, 2.0f), n);
}

// ---- a peer link that fails its data check ----------------------------------------------

template <class T>
std::vector<T> random_vector(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(static_cast<long long>(rng() % 2001) - 1000) / T(8);
  return v;
}

/// Operations that move data between the slots of a group (shifted copies, unaligned
/// operands, scans and reductions whose partials meet, a rebalancing resize, a copy to
/// another group), gathered to the host.
template <class T>
std::vector<std::vector<T>> exercise(const mg::device_group& g, const std::vector<T>& host) {
  const std::size_t n = host.size();
  std::vector<std::vector<T>> results;
  mg::distributed_vector<T> a(host, g), b(n, g), c(n, g);
  mg::copy(a.cbegin(), a.cend() - 1000, b.begin() + 1000);
  results.push_back(mg::to_vector(b));
  mg::transform(a.cbegin() + 3, a.cend(), b.cbegin(), c.begin() + 1, cuda::std::plus<>{});
  results.push_back(mg::to_vector(c));
  mg::inclusive_scan(a, c);
  results.push_back(mg::to_vector(c));
  mg::exclusive_scan(a.cbegin() + 5, a.cend(), b.begin(), T(3));
  results.push_back(mg::to_vector(b));
  results.push_back({mg::reduce(a), mg::reduce(a.cbegin() + 17, a.cend(), T(1)), mg::dot(a, b)});
  a.resize(n / 3);
  results.push_back(mg::to_vector(a));
  mg::distributed_vector<T> elsewhere(n / 3, mg::device_group({0}));
  mg::copy(a, elsewhere);
  results.push_back(mg::to_vector(elsewhere));
  return results;
}

TEST(Faults, PeerPairFailingItsCheckGoesThroughTheHostWithIdenticalResults) {
  if (mg::visible_device_count() < 2) GTEST_SKIP() << "needs two GPUs: one is visible";
  int can = 0, can_back = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can, 0, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can_back, 1, 0), cudaSuccess);
  if (!can && !can_back) GTEST_SKIP() << "devices 0 and 1 have no peer link to fail";

  const std::vector<int> slots{0, 1, 1, 0};
  mg::device_group healthy(slots);
  mg::testing::fail_peer_verification(0, 1);
  mg::testing::fail_peer_verification(1, 0);
  std::optional<mg::device_group> demoted;
  try {
    demoted.emplace(slots);
  } catch (...) {
    mg::testing::fail_peer_verification(0, 1, false);
    mg::testing::fail_peer_verification(1, 0, false);
    throw;
  }
  mg::testing::fail_peer_verification(0, 1, false);
  mg::testing::fail_peer_verification(1, 0, false);

  EXPECT_TRUE(healthy.peer_enabled(0, 1) && healthy.peer_enabled(1, 0)) << healthy.describe();
  EXPECT_EQ(demoted->route_between(0, 1).kind, mg::route::host_staged);
  EXPECT_EQ(demoted->route_between(1, 0).kind, mg::route::host_staged);
  EXPECT_EQ(demoted->route_between(0, 3).kind, mg::route::same_device);
  EXPECT_EQ(demoted->merge(), mg::merge_route::host_mapped) << "partials must not meet over the demoted link";
  EXPECT_NE(demoted->describe().find("failed its data check"), std::string::npos) << demoted->describe();

  const auto ints = random_vector<long long>(1000003, 1);
  const auto doubles = random_vector<double>(1000003, 2);
  EXPECT_EQ(exercise(*demoted, ints), exercise(healthy, ints));
  EXPECT_EQ(exercise(*demoted, doubles), exercise(healthy, doubles))
      << "the same work in the same segments must give the same bits over either route";

  // And between the two groups, in both directions.
  mg::distributed_vector<long long> from_demoted(ints, *demoted), to_healthy(ints.size(), healthy);
  mg::copy(from_demoted, to_healthy);
  EXPECT_EQ(mg::to_vector(to_healthy), ints);
  mg::distributed_vector<long long> back(ints.size(), *demoted);
  mg::copy(to_healthy, back);
  EXPECT_EQ(mg::to_vector(back), ints);
}

// ---- a user callback that throws ---------------------------------------------------------

TEST(Faults, CallbackThrowingInForEachSegmentLeavesTheVectorValid) {
  const int devices = mg::visible_device_count();
  const mg::device_group g(devices > 1 ? std::vector<int>{0, 1, 0} : std::vector<int>{0, 0, 0});
  const std::size_t n = 1000003;
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), 0);
  g.synchronize();
  const std::size_t used = g.pool(0).usage().used_bytes;
  mg::distributed_vector<int> v(host, g);

  const int caller_device = devices - 1;
  ASSERT_EQ(cudaSetDevice(caller_device), cudaSuccess);
  for (std::size_t failing : {std::size_t{0}, std::size_t{1}}) {
    SCOPED_TRACE(testing::Message() << "throwing on slot " << failing);
    int calls = 0;
    try {
      mg::for_each_segment(v, add_one_or_throw{failing, &calls});
      FAIL() << "the callback's exception did not reach the caller";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("slot " + std::to_string(failing)), std::string::npos) << e.what();
    }
    EXPECT_EQ(calls, static_cast<int>(failing) + 1) << "segments after the failing one must not be visited";
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, caller_device) << "the exception skipped restoring the caller's device";
    // The segments before the failing one got their kernel; the others are as they were.
    for (std::size_t s = 0; s < failing; ++s) {
      const auto seg = v.segment(s);
      for (std::size_t i = seg.offset(); i < seg.offset() + seg.size(); ++i) ++host[i];
    }
    EXPECT_EQ(v.size(), n);
    EXPECT_EQ(mg::to_vector(v), host);
  }
  // Fully usable afterwards.
  mg::for_each_segment(v, add_one_everywhere{});
  for (int& x : host) ++x;
  EXPECT_EQ(mg::to_vector(v), host);
  EXPECT_EQ(mg::reduce(v.cbegin() + 1000, v.cbegin() + 3000, 0), std::reduce(host.begin() + 1000, host.begin() + 3000, 0));
  v.resize(n / 2);
  host.resize(n / 2);
  EXPECT_EQ(mg::to_vector(v), host);
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  v = mg::distributed_vector<int>(0, g);
  g.synchronize();
  EXPECT_EQ(g.pool(0).usage().used_bytes, used);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- destruction while work is in flight ---------------------------------------------------

TEST(Faults, DestroyingAVectorWhileItsKernelsRunIsSafe) {
  mg::device_group g({0, 0});
  mg::device_pool& pool = g.pool(0);
  g.synchronize();
  const std::size_t used = pool.usage().used_bytes;
  mg::pinned_buffer flag_memory(2 * sizeof(int));
  volatile int* flags = mapped_flags(flag_memory, 2);
  {
    mg::distributed_vector<unsigned> v(std::size_t{1} << 22, 0u, g);
    mg::for_each_segment(v, slow_fill<unsigned>{0xdeadbeefu, flags});
  }  // v is gone while both kernels still spin; its memory is released behind them
  EXPECT_EQ(flags[0] + flags[1], 0) << "the kernels finished before the vector went away: the test proves nothing";
  // New vectors right away: they may reuse that memory only once the kernels are done.
  mg::distributed_vector<unsigned> w(std::size_t{1} << 23, 7u, g);
  mg::distributed_vector<unsigned> x(std::size_t{1} << 22, 9u, g);
  EXPECT_NO_THROW(g.synchronize());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(flags[0] + flags[1], 2) << "the kernels did not run to their end";
  EXPECT_EQ(mg::count(w, 7u), w.size()) << "the late kernels wrote into memory handed to a new vector";
  EXPECT_EQ(mg::count(x, 9u), x.size()) << "the late kernels wrote into memory handed to a new vector";
  w = mg::distributed_vector<unsigned>(0, g);
  x = mg::distributed_vector<unsigned>(0, g);
  g.synchronize();
  EXPECT_EQ(pool.usage().used_bytes, used);
}

TEST(Faults, DroppingTheLastHandleOfAGroupWaitsForItsWork) {
  mg::pinned_buffer flag_memory(3 * sizeof(int));
  volatile int* flags = mapped_flags(flag_memory, 3);
  {
    mg::device_group local({0, 0, 0});
    mg::distributed_vector<int> v(300000, 1, local);
    mg::for_each_segment(v, slow_fill<int>{5, flags});
  }  // the vector and the group go together: the group's teardown waits for its streams
  EXPECT_EQ(flags[0] + flags[1] + flags[2], 3) << "the group was torn down under running kernels";
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(Faults, PendingReductionOutlivesItsInput) {
  mg::device_group g({0, 0, 0});
  mg::pinned_buffer flag_memory(3 * sizeof(int));
  volatile int* flags = mapped_flags(flag_memory, 3);
  std::optional<mg::future<long long>> pending;
  const std::size_t n = 1000003;
  {
    mg::distributed_vector<long long> v(n, 1LL, g);
    mg::for_each_segment(v, slow_fill<long long>{2, flags});
    pending.emplace(mg::reduce_async(v));
  }  // the input is gone before the reduction has even started
  EXPECT_EQ(pending->get(), 2 * static_cast<long long>(n));
  // A future dropped unread waits for its kernels: its result memory is then reused safely.
  flags = mapped_flags(flag_memory, 3);
  {
    mg::distributed_vector<long long> v(n, 1LL, g);
    mg::for_each_segment(v, slow_fill<long long>{3, flags});
    auto dropped = mg::reduce_async(v);
  }
  EXPECT_EQ(flags[0] + flags[1] + flags[2], 3)
      << "a dropped future did not wait for the reduction behind the slow kernels";
  g.synchronize();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace
