// copy_if against thrust::copy_if and cub::DeviceSelect::If (temporary storage and output
// allocated once, outside the timing), in one binary. Every timed call includes what a user
// needs before using the result: the survivor count read back to the host (thrust::copy_if
// does that itself; for CUB it is a copy of the count to pinned memory and a wait).
// Counters: ours_ms, thrust_ms, cub_ms, speedup_vs_thrust, speedup_vs_cub.
//
// Arguments: {n, shape, survivors in percent, form}. Shape 0 is every visible GPU; shape
// k > 0 is k slots on GPU 0. Form 0: the layout-keeping copy_if(v, pred), a new vector; form
// 1: the STL copy_if(first, last, out, pred) into an existing vector of n elements.

#include "bench_support.hpp"

#include <cub/device/device_select.cuh>
#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>

#include <random>

namespace {

using namespace bench;

/// x < bound, for keys uniform in [0, 1).
struct below {
  float bound;
  __host__ __device__ bool operator()(float x) const { return x < bound; }
};

void copy_if_floats(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  using T = float;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  const below pred{static_cast<float>(state.range(2)) / 100.0f};
  const bool stl_form = state.range(3) == 1;
  state.SetLabel(shape_name(state.range(1)) + (stl_form ? ", into an output" : ", layout kept"));
  {
    std::vector<T> host(n);
    std::mt19937_64 engine(42);
    std::uniform_real_distribution<T> d(0, 1);
    for (auto& x : host) x = d(engine);
    mg::distributed_vector<T> v(host, g), out(n, g);

    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    auto policy = thrust::cuda::par.on(stream);
    thrust::device_vector<T> t_in(host.begin(), host.end()), t_out(n);
    thrust::device_vector<long long> cub_count(1);
    mg::pinned_buffer count_host(sizeof(long long));
    std::size_t cub_bytes = 0;
    const T* in = thrust::raw_pointer_cast(t_in.data());
    T* o = thrust::raw_pointer_cast(t_out.data());
    long long* selected = thrust::raw_pointer_cast(cub_count.data());
    MULTIGPU_CUDA_TRY(cub::DeviceSelect::If(nullptr, cub_bytes, in, o, selected, static_cast<std::int64_t>(n), pred, stream));
    thrust::device_vector<std::byte> cub_temp(cub_bytes);
    MULTIGPU_CUDA_TRY(cudaDeviceSynchronize());

    std::size_t kept = 0;
    auto ours = [&] {
      if (stl_form)
        kept = static_cast<std::size_t>(mg::copy_if(v.begin(), v.end(), out.begin(), pred) - out.begin());
      else
        kept = mg::copy_if(v, pred).size();
    };
    auto theirs = [&] { kept = static_cast<std::size_t>(thrust::copy_if(policy, t_in.begin(), t_in.end(), t_out.begin(), pred) - t_out.begin()); };
    auto cub_select = [&] {
      std::size_t bytes = cub_bytes;
      MULTIGPU_CUDA_TRY(cub::DeviceSelect::If(thrust::raw_pointer_cast(cub_temp.data()), bytes, in, o, selected,
                                              static_cast<std::int64_t>(n), pred, stream));
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(count_host.data(), selected, sizeof(long long), cudaMemcpyDeviceToHost, stream));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
      kept = static_cast<std::size_t>(*static_cast<long long*>(count_host.data()));
    };
    for (int i = 0; i < 2; ++i) {  // warm-up
      ours();
      theirs();
      cub_select();
    }
    double ours_ms = 0, thrust_ms = 0, cub_ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      const double mine = time_group_ms(g, ours);
      thrust_ms += time_stream_ms(stream, theirs);
      cub_ms += time_stream_ms(stream, cub_select);
      ours_ms += mine;
      ++calls;
      state.SetIterationTime(mine / 1000.0);
    }
    benchmark::DoNotOptimize(kept);
    // Bytes moved by a one-GPU select: the input read once, the survivors written once.
    report(state, double(n) * sizeof(T) * (1.0 + double(state.range(2)) / 100.0), ours_ms, thrust_ms, calls);
    state.counters["cub_ms"] = benchmark::Counter(cub_ms / static_cast<double>(calls));
    state.counters["speedup_vs_cub"] = benchmark::Counter(cub_ms / ours_ms);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

void sizes_shapes_survivors(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 4};
  if (mg::visible_device_count() > 1) shapes.push_back(0);
  for (std::int64_t n : {std::int64_t{1} << 16, std::int64_t{1} << 24, std::int64_t{1} << 28})
    for (std::int64_t shape : shapes)
      for (std::int64_t percent : {50, 1})
        for (std::int64_t form : {0, 1}) b->Args({n, shape, percent, form});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

}  // namespace

BENCHMARK(copy_if_floats)->Name("copy_if<float>")->Apply(sizes_shapes_survivors);

BENCHMARK_MAIN();
