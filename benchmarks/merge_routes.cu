// How per-device partials should meet: in pinned, mapped host memory (zero-copy, works on
// any topology) or in the first slot's device memory (direct or over peers). Measured on a
// reduction and a scan across slots, with the group forced to each route, plus the
// per-call cost of a small reduction against Thrust.
//
// Arguments: {n, shape, route}: route 0 = host mapped, 1 = device.

#include "bench_support.hpp"

#include <thrust/device_vector.h>

#include <chrono>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>

namespace {

using namespace bench;

mg::group_options with_route(std::int64_t route) {
  mg::group_options options;
  options.merge = route == 0 ? mg::merge_policy::host_mapped : mg::merge_policy::device;
  return options;
}

void reduce_by_route(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1), with_route(state.range(2)));
  state.SetLabel(shape_name(state.range(1)) + ", partials in " + std::string(mg::to_string(g.merge())));
  {
    mg::distributed_vector<float> x(n, 1.0f, g);
    float sink = 0;
    for (int i = 0; i < 5; ++i) sink += mg::reduce(x);
    for (auto _ : state) {
      const double ms = time_group_ms(g, [&] { sink += mg::reduce(x); });
      state.SetIterationTime(ms / 1000.0);
    }
    benchmark::DoNotOptimize(sink);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

void scan_by_route(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1), with_route(state.range(2)));
  state.SetLabel(shape_name(state.range(1)) + ", partials in " + std::string(mg::to_string(g.merge(mg::merge_kind::scan))));
  {
    mg::distributed_vector<float> x(n, 1.0f, g), y(n, g);
    for (int i = 0; i < 5; ++i) mg::inclusive_scan(x, y);
    for (auto _ : state) {
      const double ms = time_group_ms(g, [&] { mg::inclusive_scan(x, y); });
      state.SetIterationTime(ms / 1000.0);
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * n * sizeof(float)));
  release_cached(g);
}

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

BENCHMARK(reduce_by_route)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24}, {2, 4, 8}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.05);
BENCHMARK(scan_by_route)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24}, {2, 4, 8}, {0, 1}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond)
    ->MinTime(0.05);
BENCHMARK(dispatch_policy_cost)
    ->ArgsProduct({{1 << 16, 1 << 20, 1 << 24}, {4, 8}, {0, 1}, {0, 1}})
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
