// sort against thrust::sort and cub::DeviceRadixSort (temporary storage allocated once,
// outside the timing), and gather / scatter against thrust::gather / thrust::scatter, all
// in one binary. Each sort call sorts a fresh copy of the same random keys (the copy is not
// timed). Counters: ours_ms, thrust_ms, cub_ms, speedup_vs_thrust, speedup_vs_cub, and
// peak_extra_bytes: the largest amount of pool memory the sort held beyond the vector
// itself, on the device that held the most (also as a multiple of the data:
// peak_extra_over_data).
//
// Arguments: {n, shape}. Shape 0 is every visible GPU; shape k > 0 is k slots on GPU 0.

#include "bench_support.hpp"

#include <cub/device/device_radix_sort.cuh>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/gather.h>
#include <thrust/scatter.h>
#include <thrust/sort.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace {

using namespace bench;

template <class T>
std::vector<T> random_keys(std::size_t n) {
  std::vector<T> keys(n);
  std::mt19937_64 engine(42);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_real_distribution<T> d(-1e6, 1e6);
    for (auto& x : keys) x = d(engine);
  } else {
    for (auto& x : keys) x = static_cast<T>(engine());
  }
  return keys;
}

/// Peak pool memory beyond what was in use before, over the group's distinct devices.
template <class F>
std::size_t peak_extra_bytes(const mg::device_group& g, F&& f) {
  g.synchronize();
  std::map<int, std::size_t> before;
  for (std::size_t s = 0; s < g.size(); ++s) {
    if (before.count(g.device(s))) continue;
    g.pool(s).reset_peak();
    before[g.device(s)] = g.pool(s).usage().used_bytes;
  }
  f();
  g.synchronize();
  std::size_t worst = 0;
  std::set<int> seen;
  for (std::size_t s = 0; s < g.size(); ++s) {
    if (!seen.insert(g.device(s)).second) continue;
    const auto u = g.pool(s).usage();
    worst = std::max(worst, u.peak_used_bytes - std::min(u.peak_used_bytes, before[g.device(s)]));
  }
  return worst;
}

template <class T>
void sort_keys(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)));
  {
    const auto host = random_keys<T>(n);
    mg::distributed_vector<T> original(host, g), v(n, g);
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto policy = thrust::cuda::par.on(stream);
    thrust::device_vector<T> t_original(host.begin(), host.end()), t_keys(n), t_alt(n);
    std::size_t cub_bytes = 0;
    cub::DoubleBuffer<T> cub_keys(thrust::raw_pointer_cast(t_keys.data()), thrust::raw_pointer_cast(t_alt.data()));
    MULTIGPU_CUDA_TRY(cub::DeviceRadixSort::SortKeys(nullptr, cub_bytes, cub_keys, n, 0, int(sizeof(T) * 8), stream));
    thrust::device_vector<std::byte> cub_temp(cub_bytes);
    MULTIGPU_CUDA_TRY(cudaDeviceSynchronize());

    auto refresh = [&] { mg::copy(original, v); };
    auto ours = [&] { mg::sort(v); };
    auto thrust_refresh = [&] { thrust::copy(policy, t_original.begin(), t_original.end(), t_keys.begin()); };
    auto theirs = [&] { thrust::sort(policy, t_keys.begin(), t_keys.end()); };
    auto cub_sort = [&] {
      cub::DoubleBuffer<T> keys(thrust::raw_pointer_cast(t_keys.data()), thrust::raw_pointer_cast(t_alt.data()));
      std::size_t bytes = cub_bytes;
      MULTIGPU_CUDA_TRY(cub::DeviceRadixSort::SortKeys(thrust::raw_pointer_cast(cub_temp.data()), bytes, keys, n, 0,
                                                       int(sizeof(T) * 8), stream));
    };
    for (int i = 0; i < 2; ++i) {  // warm-up
      refresh();
      ours();
      thrust_refresh();
      theirs();
      thrust_refresh();
      cub_sort();
    }
    refresh();
    const std::size_t peak = peak_extra_bytes(g, ours);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    double ours_ms = 0, thrust_ms = 0, cub_ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      refresh();
      const double mine = time_group_ms(g, ours);
      thrust_refresh();
      thrust_ms += time_stream_ms(stream, theirs);
      thrust_refresh();
      cub_ms += time_stream_ms(stream, cub_sort);
      ours_ms += mine;
      ++calls;
      state.SetIterationTime(mine / 1000.0);
    }
    report(state, double(n) * sizeof(T), ours_ms, thrust_ms, calls);
    state.counters["cub_ms"] = benchmark::Counter(cub_ms / static_cast<double>(calls));
    state.counters["speedup_vs_cub"] = benchmark::Counter(cub_ms / ours_ms);
    state.counters["peak_extra_bytes"] = benchmark::Counter(static_cast<double>(peak));
    const std::size_t devices = std::set<int>(g.devices().begin(), g.devices().end()).size();
    const double data_per_device = double(n) * sizeof(T) / double(devices);
    state.counters["peak_extra_over_data"] = benchmark::Counter(static_cast<double>(peak) / data_per_device);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

/// gather (scatter = false) or scatter of float through a random int map.
template <bool Scatter>
void by_index(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  using T = float;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)));
  {
    std::vector<int> map_host(n);
    for (std::size_t i = 0; i < n; ++i) map_host[i] = static_cast<int>(i);
    std::shuffle(map_host.begin(), map_host.end(), std::mt19937_64(7));  // a permutation: scatter is well defined
    mg::distributed_vector<int> map(map_host, g);
    mg::distributed_vector<T> input(n, T(1), g), output(n, g);
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto policy = thrust::cuda::par.on(stream);
    thrust::device_vector<int> t_map(map_host.begin(), map_host.end());
    thrust::device_vector<T> t_input(n, T(1)), t_output(n);
    auto ours = [&] {
      if constexpr (Scatter)
        mg::scatter(input, map, output);
      else
        mg::gather(map, input, output);
    };
    auto theirs = [&] {
      if constexpr (Scatter)
        thrust::scatter(policy, t_input.begin(), t_input.end(), t_map.begin(), t_output.begin());
      else
        thrust::gather(policy, t_map.begin(), t_map.end(), t_input.begin(), t_output.begin());
    };
    for (int i = 0; i < 2; ++i) {
      ours();
      theirs();
    }
    g.synchronize();
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    // Effective bytes: the map read, one element read and one written per index.
    time_against_thrust(state, g, stream, ours, theirs, double(n) * (sizeof(int) + 2 * sizeof(T)));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

std::vector<std::int64_t> shapes() {
  std::vector<std::int64_t> s{1, 4};
  if (mg::visible_device_count() > 1) s.insert(s.begin(), 0);
  return s;
}

void sort_sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t shape : shapes())
    for (int log_n : {20, 24, 28}) b->Args({std::int64_t{1} << log_n, shape});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

void index_sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t shape : shapes()) b->Args({std::int64_t{1} << 26, shape});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

BENCHMARK(sort_keys<std::uint32_t>)->Name("sort<uint32>")->Apply(sort_sizes);
BENCHMARK(sort_keys<float>)->Name("sort<float>")->Apply(sort_sizes);
BENCHMARK(by_index<false>)->Name("gather<float>")->Apply(index_sizes);
BENCHMARK(by_index<true>)->Name("scatter<float>")->Apply(index_sizes);

}  // namespace

BENCHMARK_MAIN();
