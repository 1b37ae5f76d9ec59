// The executor's promise, tested: the local steps of one call never wait for each other, and
// the schedule's critical path (the longest chain of device work, from the recorded graph of
// work and event waits) does not grow with the number of slots. Also the spin-kernel form of
// the same promise, which needs no recording: a slot held up by a long kernel must not hold
// up the other slots' steps.

#include <multigpu/multigpu.hpp>
#include <multigpu/testing/schedule.hpp>

#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace mg = multigpu;

struct route_case {
  std::string name;
  mg::group_options options;
};

std::vector<route_case> routes() {
  mg::group_options device, mapped, staged;
  device.merge = mg::merge_policy::device;
  mapped.merge = mg::merge_policy::host_mapped;
  staged.peers = mg::peer_policy::host_staged;
  return {{"device", device}, {"host_mapped", mapped}, {"host_staged", staged}};
}

mg::device_group repeated(std::size_t k, mg::group_options options) {
  return mg::device_group(std::vector<int>(k, 0), options);
}

// The critical path of what `call` enqueues, from a recording.
std::size_t critical_path_of(const mg::device_group& group, const std::function<void()>& call) {
  group.synchronize();
  mg::testing::schedule_recording recording;
  call();
  group.synchronize();
  return mg::testing::critical_path(recording.graph());
}

// An operator the library knows nothing about: the order-keeping path.
struct plain_plus {
  __host__ __device__ int operator()(int a, int b) const { return a + b; }
};

struct is_odd {
  __host__ __device__ bool operator()(int x) const { return (x & 1) != 0; }
};

// Runs `call(v, w)` on fresh vectors over k slots and returns its critical path.
template <class Call>
std::size_t path_for(std::size_t k, const mg::group_options& options, std::size_t n, Call call) {
  mg::device_group g = repeated(k, options);
  mg::distributed_vector<int> v(n, g), w(n, g);
  mg::iota(v, 1);
  mg::fill(w, 2);
  return critical_path_of(g, [&] { call(v, w); });
}

struct named_call {
  const char* name;
  std::function<void(mg::distributed_vector<int>&, mg::distributed_vector<int>&)> call;
  std::size_t bound;  // the largest critical path allowed, whatever k
};

std::vector<named_call> calls() {
  return {
      {"reduce", [](auto& v, auto&) { (void)mg::reduce(v); }, 3},
      {"reduce_async", [](auto& v, auto&) { auto f = mg::reduce_async(v); (void)f.get(); }, 3},
      {"transform_reduce",
       [](auto& v, auto&) { (void)mg::transform_reduce(v, 0LL, cuda::std::plus<>{}, is_odd{}); }, 3},
      {"dot", [](auto& v, auto& w) { (void)mg::dot(v, w); }, 3},
      {"count_if", [](auto& v, auto&) { (void)mg::count_if(v, is_odd{}); }, 3},
      {"min_element", [](auto& v, auto&) { (void)mg::min_element(v); }, 3},
      {"max_element", [](auto& v, auto&) { (void)mg::max_element(v); }, 3},
      {"non_commutative_reduce",
       [](auto& v, auto&) { (void)mg::reduce(v, 0, plain_plus{}); }, 3},
      {"inclusive_scan", [](auto& v, auto& w) { mg::inclusive_scan(v, w); }, 5},
      {"exclusive_scan", [](auto& v, auto& w) { mg::exclusive_scan(v, w, 7); }, 5},
      {"inclusive_scan_in_place", [](auto& v, auto&) { mg::inclusive_scan(v, v); }, 5},
  };
}

}  // namespace

TEST(Schedule, CriticalPathDoesNotGrowWithTheNumberOfSlots) {
  const std::size_t n = (std::size_t{1} << 16) + 3;
  for (const auto& route : routes()) {
    for (const auto& c : calls()) {
      std::vector<std::size_t> paths;
      for (std::size_t k : {1u, 2u, 4u, 8u}) paths.push_back(path_for(k, route.options, n, c.call));
      for (std::size_t i = 0; i < paths.size(); ++i)
        EXPECT_LE(paths[i], c.bound) << c.name << " on route " << route.name << " with " << (1u << i) << " slots";
      EXPECT_EQ(paths[2], paths[3]) << c.name << " on route " << route.name
                                    << ": the critical path grew from 4 to 8 slots";
    }
  }
}

TEST(Schedule, CopyBetweenLayoutsAndHaloExchangeStayOneStepDeep) {
  const std::size_t n = (std::size_t{1} << 14) + 5;
  for (const auto& route : routes()) {
    std::vector<std::size_t> copy_paths, halo_paths;
    for (std::size_t k : {2u, 4u, 8u}) {
      mg::device_group g = repeated(k, route.options);
      mg::distributed_vector<int> a(n, g);
      mg::iota(a, 0);
      // A skewed layout: every element moves to another slot than its own.
      std::vector<std::size_t> sizes(k, n / k);
      sizes[0] += n % k;
      sizes[0] += sizes[1] / 2;
      sizes[1] -= sizes[1] / 2;
      mg::distributed_vector<int> b(g, mg::distribution::from_sizes(sizes));
      copy_paths.push_back(critical_path_of(g, [&] { mg::copy(a, b); }));
      EXPECT_EQ(mg::to_vector(b), mg::to_vector(a)) << route.name << " k=" << k;

      mg::distributed_vector<int> h(n, mg::halo{2, true}, g);
      mg::iota(h, 0);
      halo_paths.push_back(critical_path_of(g, [&] { mg::exchange_halos(h); }));
    }
    for (std::size_t i = 0; i < copy_paths.size(); ++i) {
      EXPECT_LE(copy_paths[i], 4u) << "copy between layouts, route " << route.name << ", case " << i;
      EXPECT_LE(halo_paths[i], 4u) << "halo exchange, route " << route.name << ", case " << i;
    }
    EXPECT_EQ(copy_paths[1], copy_paths[2]) << route.name;
    EXPECT_EQ(halo_paths[1], halo_paths[2]) << route.name;
  }
}

TEST(Schedule, ScanLocalReductionsDoNotWaitForEachOther) {
  // In the recorded graph, slot 2's local reduction has no path from slot 1's.
  mg::device_group g = repeated(3, {});
  mg::distributed_vector<int> v(3000, g), w(3000, g);
  mg::iota(v, 0);
  g.synchronize();
  mg::testing::schedule_recording recording;
  mg::inclusive_scan(v, w);
  g.synchronize();
  const auto graph = recording.graph();
  std::vector<std::size_t> first_on(3, SIZE_MAX);
  for (std::size_t i = 0; i < graph.nodes.size(); ++i)
    for (std::size_t s = 0; s < 3; ++s)
      if (graph.nodes[i].stream == g.stream(s) && first_on[s] == SIZE_MAX) first_on[s] = i;
  for (auto [from, to] : graph.edges) {
    EXPECT_FALSE(to == first_on[2] && graph.nodes[from].stream == g.stream(1))
        << "slot 2's first step waits for slot 1's work";
    EXPECT_FALSE(to == first_on[1] && graph.nodes[from].stream == g.stream(2));
  }
  const auto host = mg::to_vector(w);
  std::vector<int> expected(3000);
  std::vector<int> input(3000);
  std::iota(input.begin(), input.end(), 0);
  std::inclusive_scan(input.begin(), input.end(), expected.begin());
  EXPECT_EQ(host, expected);
}

namespace {

__global__ void spin_until(volatile int* release, long long max_cycles) {
  const long long start = clock64();
  while (*release == 0 && clock64() - start < max_cycles) {
  }
}

__global__ void raise_flag(volatile int* flag) { *flag = 1; }

// Slot 1 spins until released; after `call`, slot 2 raises a flag. The flag must rise
// while slot 1 still spins: nothing in `call` made slot 2 wait for slot 1.
template <class Call>
void expect_slot_two_runs_past_slot_one(const mg::group_options& options, Call call, const char* what) {
  mg::device_group g = repeated(3, options);
  mg::distributed_vector<int> v(30001, g), w(30001, g);
  mg::iota(v, 1);
  int* flags = nullptr;  // [0] release, [1] raised
  ASSERT_EQ(cudaHostAlloc(reinterpret_cast<void**>(&flags), 2 * sizeof(int), cudaHostAllocMapped), cudaSuccess);
  // Warm-up: every kernel involved is launched once first. With lazy module loading (the
  // default), a kernel's first launch loads its module, which waits for the running spin
  // kernel and would hide what is under test.
  flags[0] = 1;
  {
    mg::device_guard guard(0);
    spin_until<<<1, 1, 0, g.stream(1)>>>(flags, 1);
    raise_flag<<<1, 1, 0, g.stream(2)>>>(flags + 1);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  }
  call(v, w);
  g.synchronize();
  flags[0] = flags[1] = 0;
  {
    mg::device_guard guard(0);
    spin_until<<<1, 1, 0, g.stream(1)>>>(flags, 4'000'000'000LL);  // about 2 s at most
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  }
  call(v, w);
  raise_flag<<<1, 1, 0, g.stream(2)>>>(flags + 1);
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(1000);
  while (reinterpret_cast<volatile int*>(flags)[1] == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  const bool raised = reinterpret_cast<volatile int*>(flags)[1] != 0;
  reinterpret_cast<volatile int*>(flags)[0] = 1;
  g.synchronize();
  cudaFreeHost(flags);
  EXPECT_TRUE(raised) << what << ": slot 2 waited for the kernel spinning on slot 1";
}

}  // namespace

TEST(Schedule, ReduceDoesNotMakeOneSlotWaitForAnother) {
  for (const auto& route : routes()) {
    std::optional<mg::future<int>> result;
    expect_slot_two_runs_past_slot_one(
        route.options, [&](auto& v, auto&) { result.reset(); result.emplace(mg::reduce_async(v)); },
        ("reduce_async, route " + route.name).c_str());
    const long long n = 30001;
    EXPECT_EQ(result->get(), static_cast<int>(n * (n + 1) / 2)) << route.name;
  }
}

TEST(Schedule, RepeatedCallsAllocateNothingFromThePools) {
  mg::device_group g = repeated(4, {});
  mg::distributed_vector<float> v((std::size_t{1} << 20) + 7, g), w(v.size(), g);
  mg::fill(v, 1.0f);
  (void)mg::reduce(v);
  mg::inclusive_scan(v, w);
  g.synchronize();
  g.pool(0).reset_peak();
  const auto before = g.pool(0).usage().used_bytes;
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(mg::reduce(v), static_cast<float>(v.size()));
    mg::inclusive_scan(v, w);
    mg::exclusive_scan(v, w, 0.0f);
  }
  g.synchronize();
  EXPECT_EQ(g.pool(0).usage().peak_used_bytes, before) << "a repeated call allocated from the data pool";
  EXPECT_EQ(w[v.size() - 1], static_cast<float>(v.size() - 1));
}

TEST(Schedule, ACollectiveInsideAnotherOnTheSameGroupIsRefused) {
  mg::device_group g = repeated(2, {});
  mg::distributed_vector<int> v(1001, g);
  mg::fill(v, 1);
  EXPECT_THROW((void)mg::reduce_segments(v, 0, cuda::std::plus<>{},
                                         [&](mg::segment_view<int>, int*) { (void)mg::reduce(v); }),
               std::logic_error);
  // The group stays usable.
  EXPECT_EQ(mg::reduce(v), 1001);
}

namespace {

__global__ void write_after_spin(unsigned long long* out, unsigned long long value, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *out = value;
}

__global__ void write_value(unsigned long long* out, unsigned long long value) { *out = value; }

struct plus_u64 {
  __host__ __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const { return a + b; }
};

}  // namespace

// A step that throws after other steps enqueued writes to the partials arena: the next call on
// the same root must not reuse the arena under those writes. Call 1's slot 1 writes its cell
// late (after a spin); call 2's layout makes slot 2 write that same cell. Unless the root
// joined slot 1 on the error path, the late write lands on call 2's value.
TEST(Schedule, AStepThatThrowsStillOrdersTheArenaBeforeReuse) {
  for (const auto& route : routes()) {
    if (route.name == "host_staged") continue;  // same arena kinds as the other two
    mg::device_group g = repeated(3, route.options);
    mg::distributed_vector<int> all(300, g);
    const std::vector<std::size_t> gap_sizes{100, 0, 100};
    mg::distributed_vector<int> gap(g, mg::distribution::from_sizes(gap_sizes));
    mg::fill(all, 1);
    mg::fill(gap, 1);
    g.synchronize();
    EXPECT_THROW((void)mg::reduce_segments(all, 0ull, plus_u64{},
                                           [&](mg::segment_view<int> seg, unsigned long long* out) {
                                             if (seg.slot() == 2) throw std::runtime_error("step failed");
                                             if (seg.slot() == 1)
                                               write_after_spin<<<1, 1, 0, seg.stream()>>>(out, 1000000ull, 400'000'000LL);
                                             else
                                               write_value<<<1, 1, 0, seg.stream()>>>(out, 1ull);
                                           }),
                 std::runtime_error)
        << route.name;
    const unsigned long long total = mg::reduce_segments(
        gap, 0ull, plus_u64{}, [&](mg::segment_view<int> seg, unsigned long long* out) {
          write_value<<<1, 1, 0, seg.stream()>>>(out, 10ull + seg.slot());
        });
    EXPECT_EQ(total, 10ull + 12ull) << route.name << ": a late write of the failed call landed in the arena";
    g.synchronize();
  }
}

namespace {

__global__ void spin_for(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

// A partial of N long longs, added lane by lane.
template <int N>
struct lanes {
  long long v[N];
};
struct lanes_plus {
  template <int N>
  __host__ __device__ lanes<N> operator()(const lanes<N>& a, const lanes<N>& b) const {
    lanes<N> r;
    for (int i = 0; i < N; ++i) r.v[i] = a.v[i] + b.v[i];
    return r;
  }
};
// A partial of 2560 bytes: two of them outgrow the 4 KiB a scan leaves the root's arena.
using big = lanes<320>;
// A partial of 64 bytes, written by each piece at the start of its root's arena.
using wide = lanes<8>;
struct to_wide {
  __host__ __device__ wide operator()(int x) const {
    wide r;
    for (int i = 0; i < 8; ++i) r.v[i] = x;
    return r;
  }
};

}  // namespace

// A scan leaves the slots that read their carries from the root's arena running after it
// returns. A reduce on the same root whose partials outgrow that arena frees it on the
// root's stream, so the root must wait for those readers first. Four slots: slot 3 reads its
// carry late (its stream spins first); a reduce over slots 0 and 1 grows slot 0's arena;
// then a collective over slots 2 and 3 takes slot 2's first arena, 4 KiB like the old one,
// from the same scratch pool on slot 2's stream, which waits for neither slot 0 nor slot 3,
// and slot 2's piece writes its partial at the arena's start. Had the old arena been freed
// before slot 3 was done, the pool may hand it to slot 2 at once, and slot 3 reads that
// partial as its carry. Whether the pool reused the block is printed: a run where it never
// did could not have failed.
TEST(Schedule, AnArenaThatGrowsWaitsForTheSlotsReadingItsCarries) {
  mg::group_options device;
  device.merge = mg::merge_policy::device;
  const std::size_t n = 4 * 4096;
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), 1);
  std::vector<int> want(n);
  std::inclusive_scan(host.begin(), host.end(), want.begin());
  const std::vector<big> bigs(4, big{{1}});
  int rate_khz = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0), cudaSuccess);
  const long long spin_cycles = static_cast<long long>(rate_khz) * 300;  // about 300 ms
  {
    // Every kernel below is launched once first, on another group: a kernel's first launch
    // loads its module, which would wait for the spin and hide what is under test.
    mg::device_group warm = repeated(4, device);
    mg::distributed_vector<int> x(host, warm), y(n, warm);
    mg::distributed_vector<big> b(bigs, warm);
    mg::inclusive_scan(x, y);
    (void)mg::reduce(b.begin(), b.begin() + 2, big{}, mg::commutative(lanes_plus{}));
    (void)mg::transform_reduce(x.begin() + n / 2, x.end(), wide{}, mg::commutative(lanes_plus{}), to_wide{});
    mg::device_guard guard(0);
    spin_for<<<1, 1, 0, warm.stream(3)>>>(1);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    warm.synchronize();
  }
  int reused = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    mg::device_group g = repeated(4, device);
    auto& scratch = mg::detail::resources_of(g).scratch();
    mg::distributed_vector<int> x(host, g), y(n, g);
    mg::distributed_vector<big> b(bigs, g);
    mg::inclusive_scan(x, y);  // slot 0's arena: 4 KiB
    g.synchronize();
    const void* old_arena = scratch.slot(0).partials(1);  // no growth: it holds 4 KiB
    {
      mg::device_guard guard(0);
      spin_for<<<1, 1, 0, g.stream(3)>>>(spin_cycles);
      ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    }
    mg::inclusive_scan(x, y);  // slot 3 reads its carry after the spin
    auto grown = mg::reduce_async(b.begin(), b.begin() + 2, big{}, mg::commutative(lanes_plus{}));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // slot 0's stream passes a free it may hold
    auto other = mg::transform_reduce_async(x.begin() + n / 2, x.end(), wide{}, mg::commutative(lanes_plus{}), to_wide{});
    if (scratch.slot(2).partials(1) == old_arena) ++reused;
    EXPECT_EQ(grown.get().v[0], 2);
    (void)other.get();
    const std::vector<int> got = mg::to_vector(y);
    const auto wrong = std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin();
    EXPECT_EQ(static_cast<std::size_t>(wrong), n)
        << "attempt " << attempt << ": element " << wrong << " is wrong: a slot read its carry from a freed arena";
  }
  std::printf("[          ] the pool handed slot 0's old arena to slot 2 in %d of 3 attempts\n", reused);
}
