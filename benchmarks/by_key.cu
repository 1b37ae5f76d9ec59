// reduce_by_key and inclusive_scan_by_key against CUB with storage allocated once and Thrust,
// in one binary. Counters: ours_ms, thrust_ms, cub_ms, speedup_vs_thrust, speedup_vs_cub.

#include "bench_support.hpp"

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>

namespace {

using namespace bench;

// reduce_by_key and inclusive_scan_by_key of float values under int keys in runs of 8 (the
// keys cycle through 1000 values), against CUB with storage allocated once (plus, for
// reduce_by_key, the run count read back, which a user needs) and Thrust, in one binary.
// Arguments: {n, shape, algorithm}; algorithm 0: reduce_by_key into given outputs (the STL
// form), 1: the layout-keeping reduce_by_key(keys, values), 2: inclusive_scan_by_key.
void by_key_floats(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  const int algorithm = static_cast<int>(state.range(2));
  const char* names[] = {"reduce_by_key, into outputs", "reduce_by_key, layout kept", "inclusive_scan_by_key"};
  state.SetLabel(shape_name(state.range(1)) + ", " + names[algorithm]);
  {
    std::vector<int> keys(n);
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) {
      keys[i] = static_cast<int>((i / 8) % 1000);
      values[i] = static_cast<float>(i % 7);
    }
    mg::distributed_vector<int> k(keys, g), keys_out(n, g);
    mg::distributed_vector<float> v(values, g), values_out(n, g);

    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto policy = thrust::cuda::par.on(stream);
    thrust::device_vector<int> t_keys(keys.begin(), keys.end()), t_keys_out(n);
    thrust::device_vector<float> t_values(values.begin(), values.end()), t_values_out(n);
    thrust::device_vector<long long> cub_runs(1);
    mg::pinned_buffer runs_host(sizeof(long long));
    const int* ki = thrust::raw_pointer_cast(t_keys.data());
    int* ko = thrust::raw_pointer_cast(t_keys_out.data());
    const float* vi = thrust::raw_pointer_cast(t_values.data());
    float* vo = thrust::raw_pointer_cast(t_values_out.data());
    long long* runs = thrust::raw_pointer_cast(cub_runs.data());
    const auto items = static_cast<std::int64_t>(n);
    auto cub_call = [&](void* temp, std::size_t& bytes) {
      if (algorithm == 2)
        return cub::DeviceScan::InclusiveScanByKey(temp, bytes, ki, vi, vo, cuda::std::plus<>{}, items,
                                                   cuda::std::equal_to<>{}, stream);
      return cub::DeviceReduce::ReduceByKey(temp, bytes, ki, ko, vi, vo, runs, cuda::std::plus<>{}, items, stream);
    };
    std::size_t cub_bytes = 0;
    MULTIGPU_CUDA_TRY(cub_call(nullptr, cub_bytes));
    thrust::device_vector<std::byte> cub_temp(cub_bytes);
    MULTIGPU_CUDA_TRY(cudaDeviceSynchronize());

    std::size_t produced = 0;
    auto ours = [&] {
      if (algorithm == 0)
        produced = static_cast<std::size_t>(mg::reduce_by_key(k, v, keys_out, values_out).first - keys_out.begin());
      else if (algorithm == 1)
        produced = mg::reduce_by_key(k, v).first.size();
      else
        mg::inclusive_scan_by_key(k, v, values_out);
    };
    auto theirs = [&] {
      if (algorithm == 2)
        thrust::inclusive_scan_by_key(policy, t_keys.begin(), t_keys.end(), t_values.begin(), t_values_out.begin());
      else
        produced = static_cast<std::size_t>(thrust::reduce_by_key(policy, t_keys.begin(), t_keys.end(), t_values.begin(),
                                                                  t_keys_out.begin(), t_values_out.begin())
                                                .first -
                                            t_keys_out.begin());
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    };
    auto cub_baseline = [&] {
      std::size_t bytes = cub_bytes;
      MULTIGPU_CUDA_TRY(cub_call(thrust::raw_pointer_cast(cub_temp.data()), bytes));
      if (algorithm != 2)
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(runs_host.data(), runs, sizeof(long long), cudaMemcpyDeviceToHost, stream));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    };
    for (int i = 0; i < 2; ++i) {  // warm-up
      ours();
      theirs();
      cub_baseline();
    }
    double ours_ms = 0, thrust_ms = 0, cub_ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      const double mine = time_group_ms(g, ours);
      thrust_ms += time_stream_ms(stream, theirs);
      cub_ms += time_stream_ms(stream, cub_baseline);
      ours_ms += mine;
      ++calls;
      state.SetIterationTime(mine / 1000.0);
    }
    benchmark::DoNotOptimize(produced);
    // Bytes moved on one GPU: keys and values read once, the outputs written once.
    const double out_bytes = algorithm == 2 ? double(n) * sizeof(float) : double(n) / 8 * (sizeof(int) + sizeof(float));
    report(state, double(n) * (sizeof(int) + sizeof(float)) + out_bytes, ours_ms, thrust_ms, calls);
    state.counters["cub_ms"] = benchmark::Counter(cub_ms / static_cast<double>(calls));
    state.counters["speedup_vs_cub"] = benchmark::Counter(cub_ms / ours_ms);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

void sizes_shapes_algorithms(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 4};
  if (mg::visible_device_count() > 1) shapes.push_back(0);
  for (std::int64_t n : {std::int64_t{1} << 16, std::int64_t{1} << 24, std::int64_t{1} << 27})
    for (std::int64_t shape : shapes)
      for (std::int64_t algorithm : {0, 1, 2}) b->Args({n, shape, algorithm});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

}  // namespace

BENCHMARK(by_key_floats)->Name("by_key<float>")->Apply(sizes_shapes_algorithms);

BENCHMARK_MAIN();
