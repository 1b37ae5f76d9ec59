// multigpu against single-GPU Thrust, side by side in one binary: transform (saxpy),
// reduce, transform_reduce (dot), inclusive and exclusive scan, fill and copy. Each case
// times both with CUDA events after warm-up and reports our bytes per second, Thrust's,
// and the speed-up over Thrust (counters in the JSON output).
//
// Arguments: {n, shape}. Shape 0 is every visible GPU; shape k > 0 is k slots on GPU 0.

#include "bench_support.hpp"

#include <thrust/copy.h>
#include <thrust/device_vector.h>
#include <thrust/execution_policy.h>
#include <thrust/fill.h>
#include <thrust/inner_product.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/transform.h>

#include <cuda/std/functional>

namespace {

using namespace bench;

template <class T>
struct saxpy {
  T a;
  __host__ __device__ T operator()(const T& x, const T& y) const { return a * x + y; }
};

enum class algorithm { transform, reduce, dot, inclusive_scan, exclusive_scan, fill, copy };

constexpr double bytes_moved(algorithm a, std::size_t n, std::size_t size) {
  switch (a) {
    case algorithm::transform: return 3.0 * n * size;  // two reads, one write
    case algorithm::reduce: return 1.0 * n * size;
    case algorithm::dot: return 2.0 * n * size;
    case algorithm::inclusive_scan:
    case algorithm::exclusive_scan:
    case algorithm::copy: return 2.0 * n * size;
    case algorithm::fill: return 1.0 * n * size;
  }
  return 0;
}

template <class T, algorithm A>
void run(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)));
  {
    mg::distributed_vector<T> x(n, T(1), g), y(n, T(2), g), out(n, g);
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    thrust::device_vector<T> tx(n, T(1)), ty(n, T(2)), tout(n);
    auto policy = thrust::cuda::par.on(stream);
    T sink{};

    auto ours = [&] {
      if constexpr (A == algorithm::transform) mg::transform(x, y, out, saxpy<T>{T(2)});
      if constexpr (A == algorithm::reduce) sink += mg::reduce(x);
      if constexpr (A == algorithm::dot) sink += mg::dot(x, y);
      if constexpr (A == algorithm::inclusive_scan) mg::inclusive_scan(x, out);
      if constexpr (A == algorithm::exclusive_scan) mg::exclusive_scan(x, out, T(0));
      if constexpr (A == algorithm::fill) mg::fill(out, T(3));
      if constexpr (A == algorithm::copy) mg::copy(x, out);
    };
    auto theirs = [&] {
      if constexpr (A == algorithm::transform)
        thrust::transform(policy, tx.begin(), tx.end(), ty.begin(), tout.begin(), saxpy<T>{T(2)});
      if constexpr (A == algorithm::reduce) sink += thrust::reduce(policy, tx.begin(), tx.end());
      if constexpr (A == algorithm::dot) sink += thrust::inner_product(policy, tx.begin(), tx.end(), ty.begin(), T(0));
      if constexpr (A == algorithm::inclusive_scan) thrust::inclusive_scan(policy, tx.begin(), tx.end(), tout.begin());
      if constexpr (A == algorithm::exclusive_scan)
        thrust::exclusive_scan(policy, tx.begin(), tx.end(), tout.begin(), T(0));
      if constexpr (A == algorithm::fill) thrust::fill(policy, tout.begin(), tout.end(), T(3));
      if constexpr (A == algorithm::copy) thrust::copy(policy, tx.begin(), tx.end(), tout.begin());
    };
    for (int i = 0; i < 3; ++i) {  // warm-up: module loading, pools, Thrust's first allocations
      ours();
      theirs();
    }
    g.synchronize();
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    double ours_ms = 0, thrust_ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      const double mine = time_group_ms(g, ours);
      thrust_ms += time_stream_ms(stream, theirs);
      ours_ms += mine;
      ++calls;
      state.SetIterationTime(mine / 1000.0);
    }
    benchmark::DoNotOptimize(sink);
    report(state, bytes_moved(A, n, sizeof(T)), ours_ms, thrust_ms, calls);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

/// Copy between vectors on two groups of the same devices whose slots may only meet through
/// pinned host memory: the host-staged route's bandwidth (no Thrust counterpart).
template <class T>
void copy_host_staged(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  const mg::device_group staged = group_for(state.range(1), {mg::peer_policy::host_staged});
  state.SetLabel(shape_name(state.range(1)) + ", host staged");
  {
    mg::distributed_vector<T> x(n, T(1), g), out(n, staged);
    for (int i = 0; i < 2; ++i) mg::copy(x, out);
    double ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      g.synchronize();
      staged.synchronize();
      const double t = time_group_ms(staged, [&] { mg::copy(x, out); });
      ms += t;
      ++calls;
      state.SetIterationTime(t / 1000.0);
    }
    report(state, 2.0 * n * sizeof(T), ms, 0, calls);
  }
  release_cached(g);
  release_cached(staged);
}

void sizes_and_shapes(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 2, 4, 8};
  if (mg::visible_device_count() > 1) shapes.insert(shapes.begin(), 0);
  for (std::int64_t shape : shapes)
    for (std::int64_t n = std::int64_t{1} << 16; n <= std::int64_t{1} << 30; n *= 4) b->Args({n, shape});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.05);
}

#define MULTIGPU_BENCH(T, A) \
  BENCHMARK(run<T, algorithm::A>)->Name(#A "<" #T ">")->Apply(sizes_and_shapes)

MULTIGPU_BENCH(float, transform);
MULTIGPU_BENCH(double, transform);
MULTIGPU_BENCH(float, reduce);
MULTIGPU_BENCH(double, reduce);
MULTIGPU_BENCH(float, dot);
MULTIGPU_BENCH(double, dot);
MULTIGPU_BENCH(float, inclusive_scan);
MULTIGPU_BENCH(double, inclusive_scan);
MULTIGPU_BENCH(float, exclusive_scan);
MULTIGPU_BENCH(double, exclusive_scan);
MULTIGPU_BENCH(float, fill);
MULTIGPU_BENCH(double, fill);
MULTIGPU_BENCH(float, copy);
MULTIGPU_BENCH(double, copy);
BENCHMARK(copy_host_staged<float>)->Name("copy_host_staged<float>")->Apply(sizes_and_shapes);

}  // namespace

BENCHMARK_MAIN();
