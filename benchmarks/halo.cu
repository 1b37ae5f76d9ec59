// Halo exchange and stencils. exchange: time to refresh every halo of a vector for halo
// widths 1 and 1024 over slot counts (direct, and forced through the host). stencil: a
// 3-point stencil (one explicit heat step) in GB/s, against the same stencil written with
// single-GPU Thrust (a transform over indices reading the neighbours), same n, same run.
//
// Arguments: exchange {width, shape, host_staged}; stencil {n, shape}.

#include "bench_support.hpp"

#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/transform.h>

namespace {

using namespace bench;

void exchange(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto width = static_cast<std::size_t>(state.range(0));
  mg::group_options options;
  if (state.range(2)) options.peers = mg::peer_policy::host_staged;
  const mg::device_group g = group_for(state.range(1), options);
  state.SetLabel(shape_name(state.range(1)) + (state.range(2) ? ", host staged" : ""));
  {
    const std::size_t n = std::size_t{1} << 24;
    mg::distributed_vector<float> v(n, mg::halo{width, true}, g);
    for (int i = 0; i < 3; ++i) mg::exchange_halos(v);
    for (auto _ : state) {
      const double ms = time_group_ms(g, [&] { mg::exchange_halos(v); });
      state.SetIterationTime(ms / 1000.0);
    }
    // Bytes moved: two halos of `width` elements per slot.
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * width * sizeof(float) * g.size()));
  }
  release_cached(g);
}

struct heat_step {
  __host__ __device__ float operator()(const mg::stencil_window<float>& u) const {
    return u[0] + 0.25f * (u[-1] - 2 * u[0] + u[1]);
  }
};

/// The Thrust version: interior points only, neighbours read through the raw pointer.
struct thrust_heat_step {
  const float* u;
  __host__ __device__ float operator()(std::size_t i) const { return u[i] + 0.25f * (u[i - 1] - 2 * u[i] + u[i + 1]); }
};

void stencil(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)));
  {
    mg::distributed_vector<float> a(n, mg::halo{1, true}, g), b(n, mg::halo{1, true}, g);
    mg::fill(a, 1.0f);
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    thrust::device_vector<float> ta(n, 1.0f), tb(n);
    auto policy = thrust::cuda::par.on(stream);
    auto ours = [&] { mg::stencil_transform(a, b, 1, heat_step{}); };
    auto theirs = [&] {
      thrust::transform(policy, thrust::counting_iterator<std::size_t>(1), thrust::counting_iterator<std::size_t>(n - 1),
                        tb.begin() + 1, thrust_heat_step{thrust::raw_pointer_cast(ta.data())});
    };
    for (int i = 0; i < 3; ++i) {
      ours();
      theirs();
    }
    time_against_thrust(state, g, stream, ours, theirs, 2.0 * n * sizeof(float));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

void exchange_args(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 2, 4, 8};
  if (mg::visible_device_count() > 1) shapes.insert(shapes.begin(), 0);
  for (std::int64_t width : {1, 1024})
    for (std::int64_t shape : shapes)
      for (std::int64_t staged : {0, 1}) b->Args({width, shape, staged});
  b->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.05);
}

void stencil_args(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 2, 4, 8};
  if (mg::visible_device_count() > 1) shapes.insert(shapes.begin(), 0);
  for (std::int64_t n : {std::int64_t{1} << 24, std::int64_t{1} << 28})
    for (std::int64_t shape : shapes) b->Args({n, shape});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

BENCHMARK(exchange)->Apply(exchange_args);
BENCHMARK(stencil)->Apply(stencil_args);

}  // namespace

BENCHMARK_MAIN();
