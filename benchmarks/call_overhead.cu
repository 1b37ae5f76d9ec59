// What a call costs beyond its work: the dispatch policies' host time, the cost of one more
// segment under each policy against the floor of one empty launch a slot (the table in
// docs/performance.md), and one small blocking reduction against Thrust's.

#include "bench_support.hpp"

#include <multigpu/runtime/detail/graph_replay.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

#include <chrono>

namespace {

using namespace bench;

/// Dispatch: the caller's thread enqueues every slot's work in turn, or each slot's own
/// persistent thread does. Host wall time of one reduction or scan across the slots.
/// Arguments: {n, shape, dispatch (0 caller thread, 1 worker threads), algorithm (0 reduce, 1 scan)}.
void dispatch_policy_cost(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  mg::group_options options;
  options.dispatch = state.range(2) ? mg::dispatch_policy::worker_threads : mg::dispatch_policy::caller_thread;
  const mg::device_group g = group_for(state.range(1), options);
  const bool scan = state.range(3) != 0;
  state.SetLabel(shape_name(state.range(1)) + (scan ? ", inclusive_scan" : ", reduce") +
                 (state.range(2) ? ", worker threads" : ", caller thread"));
  {
    mg::distributed_vector<float> x(n, 1.0f, g), y(n, g);
    float sink = 0;
    auto once = [&] {
      if (scan) {
        mg::inclusive_scan(x, y);
        g.synchronize();
      } else {
        sink += mg::reduce(x);
      }
    };
    for (int i = 0; i < 10; ++i) once();
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      once();
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    benchmark::DoNotOptimize(sink);
  }
  release_cached(g);
}

/// The cost of one more segment: host wall time of one call on 2^16 floats (blocking: a
/// reduction returns its value, other calls are followed by a synchronisation) over 1, 2, 4
/// and 8 slots of GPU 0. Per extra segment = (t(k) - t(1)) / (k - 1), from the JSON.
/// Arguments: {shape, dispatch (0 caller thread, 1 worker threads, 2 graph replay), algorithm}.
/// Algorithms: 0 reduce, 1 dot, 2 transform_reduce (count_if), 3 inclusive_scan,
/// 4 exclusive_scan, 5 transform, 6 fill, 7 copy, 8 the floor: one empty kernel on each slot's
/// stream, launched with the CUDA runtime directly, then the same synchronisation (what one
/// launch a segment costs on this host, whatever the dispatch policy).
__global__ void empty_kernel() {}

struct is_positive {
  __host__ __device__ bool operator()(float x) const { return x > 0.0f; }
};
struct twice {
  __host__ __device__ float operator()(float x) const { return 2.0f * x; }
};

void segment_overhead(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::size_t n = std::size_t{1} << 16;
  mg::group_options options;
  static const mg::dispatch_policy policies[] = {mg::dispatch_policy::caller_thread,
                                                 mg::dispatch_policy::worker_threads, mg::dispatch_policy::graph};
  static const char* policy_names[] = {", caller thread", ", worker threads", ", graph replay"};
  options.dispatch = policies[state.range(1)];
  const mg::device_group g = group_for(state.range(0), options);
  static const char* names[] = {"reduce", "dot",  "count_if", "inclusive_scan", "exclusive_scan",
                                "transform", "fill", "copy", "empty kernel"};
  const int algorithm = static_cast<int>(state.range(2));
  state.SetLabel(shape_name(state.range(0)) + ", " + names[algorithm] + policy_names[state.range(1)]);
  {
    mg::distributed_vector<float> x(n, 1.0f, g), y(n, 2.0f, g), z(n, g);
    float sink = 0;
    auto once = [&] {
      switch (algorithm) {
        case 0: sink += mg::reduce(x); return;
        case 1: sink += mg::dot(x, y); return;
        case 2: sink += static_cast<float>(mg::count_if(x, is_positive{})); return;
        case 3: mg::inclusive_scan(x, z); break;
        case 4: mg::exclusive_scan(x, z, 0.0f); break;
        case 5: mg::transform(x, z, twice{}); break;
        case 6: mg::fill(z, 3.0f); break;
        case 7: mg::copy(x, z); break;
        case 8:
          for (std::size_t slot = 0; slot < g.size(); ++slot) {
            MULTIGPU_CUDA_TRY(cudaSetDevice(g.device(slot)));
            empty_kernel<<<1, 1, 0, g.stream(slot)>>>();
            MULTIGPU_CUDA_TRY(cudaGetLastError());
          }
          break;
      }
      g.synchronize();
    };
    for (int i = 0; i < 20; ++i) once();
    const std::size_t used_before = g.pool(0).usage().used_bytes;
    g.pool(0).reset_peak();
    const auto* graphs = mg::detail::executor_of(g).graphs();
    const auto replays_before = graphs ? graphs->stats().replays : 0;
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      once();
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    // Under graph replay, the share of calls that launched a cached graph as is.
    if (graphs)
      state.counters["replayed"] = benchmark::Counter(
          static_cast<double>(graphs->stats().replays - replays_before) / static_cast<double>(state.iterations()));
    state.counters["pool_bytes_per_call"] =
        benchmark::Counter(static_cast<double>(g.pool(0).usage().peak_used_bytes - used_before));
    state.counters["scratch_bytes"] = benchmark::Counter(static_cast<double>(g.scratch_bytes()));
    benchmark::DoNotOptimize(sink);
  }
}

/// Host wall time of one small blocking reduction, ours and Thrust's, in the same run.
void small_reduce_latency(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)));
  mg::distributed_vector<float> x(n, 1.0f, g);
  thrust::device_vector<float> tx(n, 1.0f);
  float sink = 0;
  for (int i = 0; i < 10; ++i) sink += mg::reduce(x) + thrust::reduce(thrust::cuda::par, tx.begin(), tx.end());
  double ours = 0, theirs = 0;
  std::int64_t calls = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    sink += mg::reduce(x);
    auto t1 = std::chrono::steady_clock::now();
    sink += thrust::reduce(thrust::cuda::par, tx.begin(), tx.end());
    auto t2 = std::chrono::steady_clock::now();
    const double mine = std::chrono::duration<double, std::milli>(t1 - t0).count();
    ours += mine;
    theirs += std::chrono::duration<double, std::milli>(t2 - t1).count();
    ++calls;
    state.SetIterationTime(mine / 1000.0);
  }
  benchmark::DoNotOptimize(sink);
  report(state, static_cast<double>(n * sizeof(float)), ours, theirs, calls);
}

BENCHMARK(dispatch_policy_cost)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24}, {4, 8}, {0, 1}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.05);
BENCHMARK(segment_overhead)
    ->ArgsProduct({{1, 2, 4, 8}, {0, 1, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.05);
BENCHMARK(small_reduce_latency)
    ->ArgsProduct({{1 << 16, 1 << 20}, {1, 4}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.1);

}  // namespace

BENCHMARK_MAIN();
