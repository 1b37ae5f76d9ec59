// multigpu against single-GPU baselines, side by side in one binary: transform (saxpy),
// reduce, transform_reduce (dot), inclusive and exclusive scan, fill and copy. Three
// baselines run in the same iteration, on one stream of GPU 0:
// - the Thrust call users write (thrust::cuda::par.on(stream): Thrust allocates its
//   temporary storage with cudaMalloc and frees it on every call);
// - Thrust with a caching allocator (thrust::cuda::par_nosync(alloc).on(stream));
// - CUB with temporary storage allocated once: the fair best single-GPU figure.
// Each case reports our bytes per second and the speed-up over each baseline (counters
// speedup_vs_thrust, speedup_vs_thrust_cached, speedup_vs_cub), plus the pool bytes a call
// allocates after warm-up (pool_bytes_per_call, 0 when the scratch is reused) and the
// executor's persistent scratch (scratch_bytes).
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

#include <cub/device/device_for.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_transform.cuh>
#include <cub/util_allocator.cuh>
#include <cuda/std/functional>
#include <cuda/std/tuple>
#include <thrust/iterator/counting_iterator.h>


namespace {

using namespace bench;

template <class T>
struct saxpy {
  T a;
  __host__ __device__ T operator()(const T& x, const T& y) const { return a * x + y; }
};

/// Thrust's temporary storage from CUB's caching allocator: freed blocks are kept per size bin
/// (powers of two from 256 bytes to 16 GiB, no cap) and handed out again, in stream order.
class caching_allocator {
 public:
  using value_type = char;
  explicit caching_allocator(cudaStream_t stream) : stream_(stream) {}
  caching_allocator(const caching_allocator&) = delete;
  caching_allocator& operator=(const caching_allocator&) = delete;
  char* allocate(std::ptrdiff_t n) {
    void* p = nullptr;
    MULTIGPU_CUDA_TRY(cache_.DeviceAllocate(&p, static_cast<std::size_t>(n), stream_));
    return static_cast<char*>(p);
  }
  void deallocate(char* p, std::size_t) { MULTIGPU_CUDA_TRY(cache_.DeviceFree(p)); }

 private:
  cub::CachingDeviceAllocator cache_{2, 8, 34};
  cudaStream_t stream_;
};

template <class T>
struct constant_of {
  T* out;
  T value;
  __host__ __device__ void operator()(std::size_t i) const { out[i] = value; }
};

template <class T>
struct product_of {
  const T* a;
  const T* b;
  __host__ __device__ T operator()(std::size_t i) const { return a[i] * b[i]; }
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
    caching_allocator cache(stream);
    auto cached = thrust::cuda::par_nosync(cache).on(stream);
    T sink{};
    // CUB with temporary storage allocated once, the largest any case needs; the result of a
    // reduction returns to the host as ours does.
    const T* px = thrust::raw_pointer_cast(tx.data());
    const T* py = thrust::raw_pointer_cast(ty.data());
    T* pout = thrust::raw_pointer_cast(tout.data());
    thrust::device_vector<T> tresult(1);
    T* presult = thrust::raw_pointer_cast(tresult.data());
    T* host_result = nullptr;
    MULTIGPU_CUDA_TRY(cudaMallocHost(&host_result, sizeof(T)));
    std::size_t temp_bytes = 0;
    {
      std::size_t b = 0;
      MULTIGPU_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, b, px, presult, n, stream));
      temp_bytes = std::max(temp_bytes, b);
      MULTIGPU_CUDA_TRY(cub::DeviceReduce::TransformReduce(nullptr, b, thrust::counting_iterator<std::size_t>(0), presult,
                                                           n, cuda::std::plus<>{}, product_of<T>{px, py}, T(0), stream));
      temp_bytes = std::max(temp_bytes, b);
      MULTIGPU_CUDA_TRY(cub::DeviceScan::InclusiveSum(nullptr, b, px, pout, n, stream));
      temp_bytes = std::max(temp_bytes, b);
      MULTIGPU_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, b, px, pout, n, stream));
      temp_bytes = std::max(temp_bytes, b);
    }
    thrust::device_vector<char> ttemp(std::max<std::size_t>(temp_bytes, 1));
    void* temp = thrust::raw_pointer_cast(ttemp.data());
    auto cub_result_to_host = [&] {
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(host_result, presult, sizeof(T), cudaMemcpyDeviceToHost, stream));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
      sink += *host_result;
    };
    auto best = [&] {
      std::size_t b = temp_bytes;
      if constexpr (A == algorithm::transform)
        MULTIGPU_CUDA_TRY(cub::DeviceTransform::Transform(cuda::std::make_tuple(px, py), pout, n, saxpy<T>{T(2)}, stream));
      if constexpr (A == algorithm::reduce) {
        MULTIGPU_CUDA_TRY(cub::DeviceReduce::Sum(temp, b, px, presult, n, stream));
        cub_result_to_host();
      }
      if constexpr (A == algorithm::dot) {
        MULTIGPU_CUDA_TRY(cub::DeviceReduce::TransformReduce(temp, b, thrust::counting_iterator<std::size_t>(0), presult, n,
                                                             cuda::std::plus<>{}, product_of<T>{px, py}, T(0), stream));
        cub_result_to_host();
      }
      if constexpr (A == algorithm::inclusive_scan) MULTIGPU_CUDA_TRY(cub::DeviceScan::InclusiveSum(temp, b, px, pout, n, stream));
      if constexpr (A == algorithm::exclusive_scan) MULTIGPU_CUDA_TRY(cub::DeviceScan::ExclusiveSum(temp, b, px, pout, n, stream));
      if constexpr (A == algorithm::fill) MULTIGPU_CUDA_TRY(cub::DeviceFor::Bulk(n, constant_of<T>{pout, T(3)}, stream));
      if constexpr (A == algorithm::copy)
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(pout, px, n * sizeof(T), cudaMemcpyDeviceToDevice, stream));
    };
    auto theirs_cached = [&] {
      if constexpr (A == algorithm::transform)
        thrust::transform(cached, tx.begin(), tx.end(), ty.begin(), tout.begin(), saxpy<T>{T(2)});
      if constexpr (A == algorithm::reduce) sink += thrust::reduce(cached, tx.begin(), tx.end());
      if constexpr (A == algorithm::dot) sink += thrust::inner_product(cached, tx.begin(), tx.end(), ty.begin(), T(0));
      if constexpr (A == algorithm::inclusive_scan) thrust::inclusive_scan(cached, tx.begin(), tx.end(), tout.begin());
      if constexpr (A == algorithm::exclusive_scan)
        thrust::exclusive_scan(cached, tx.begin(), tx.end(), tout.begin(), T(0));
      if constexpr (A == algorithm::fill) thrust::fill(cached, tout.begin(), tout.end(), T(3));
      if constexpr (A == algorithm::copy) thrust::copy(cached, tx.begin(), tx.end(), tout.begin());
    };

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
    for (int i = 0; i < 3; ++i) {  // warm-up: module loading, pools, scratch, Thrust's first allocations
      ours();
      theirs();
      theirs_cached();
      best();
    }
    g.synchronize();
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    for (std::size_t s = 0; s < g.size(); ++s) g.pool(s).reset_peak();
    const std::size_t used_before = g.pool(0).usage().used_bytes;
    double ours_ms = 0, thrust_ms = 0, cached_ms = 0, cub_ms = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      const double mine = time_group_ms(g, ours);
      thrust_ms += time_stream_ms(stream, theirs);
      cached_ms += time_stream_ms(stream, theirs_cached);
      cub_ms += time_stream_ms(stream, best);
      ours_ms += mine;
      ++calls;
      state.SetIterationTime(mine / 1000.0);
    }
    g.synchronize();
    benchmark::DoNotOptimize(sink);
    report(state, bytes_moved(A, n, sizeof(T)), ours_ms, thrust_ms, calls);
    state.counters["speedup_vs_thrust_cached"] = benchmark::Counter(cached_ms / ours_ms);
    state.counters["speedup_vs_cub"] = benchmark::Counter(cub_ms / ours_ms);
    state.counters["cub_ms"] = benchmark::Counter(cub_ms / static_cast<double>(calls));
    // Pool bytes above the data that calls took after warm-up (0: nothing allocated per call).
    state.counters["pool_bytes_per_call"] =
        benchmark::Counter(static_cast<double>(g.pool(0).usage().peak_used_bytes - used_before));
    state.counters["scratch_bytes"] = benchmark::Counter(static_cast<double>(g.scratch_bytes()));
    MULTIGPU_CUDA_TRY(cudaFreeHost(host_result));
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
