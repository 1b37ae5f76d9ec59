// Stencils on distributed N-D arrays against a hand-written single-GPU kernel on one padded
// array (as NVIDIA's multi-GPU programming-models Jacobi writes it), both in the same run:
// 2-D 5-point on 16384² floats and 3-D 7-point on 512³ floats, periodic, halo 1. Rows: 1 slot,
// 4 slots of GPU 0 and every GPU (when there are several), each overlapped (interior while the
// halos move) and exchange-first. Each sample times 10 back-to-back calls on both sides, as a
// solver's loop runs them; the time and the counters are per call. ratio_vs_baseline =
// baseline time / our time; the 4-slot against 1-slot ratio is the quotient of two rows'
// ours_ms from the same run.
//
// halo_face_16384: one exchange_halos of a 2-D float array split in two on GPU 0, so that
// one face of 16384 floats moves each way: a row face (contiguous, slabs {2, 1}) or a column
// face (strided, {1, 2}), against two bare cudaMemcpy2DAsync calls moving the same faces of one
// padded array on one stream (ratio_vs_memcpy2d).
//
// stencil_host_cost: the host time to enqueue one 5-point stencil_transform on 4 slots of GPU
// 0 (256² floats, so the GPU never holds the host back), per dispatch policy.
//
// Arguments: stencil {shape, overlapped}; halo_face {column}; stencil_host_cost {policy}.

#include "bench_support.hpp"
#include "stencil_operators.hpp"

#include <multigpu/mdarray.hpp>

#include <chrono>

namespace {

using namespace bench;


/// The baseline: one (n + 2)² array with its frame, one thread per interior point.
__global__ void five_point_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t j = blockIdx.x * blockDim.x + threadIdx.x + 1;
  const std::size_t i = blockIdx.y * blockDim.y + threadIdx.y + 1;
  const std::size_t pitch = n + 2;
  if (i <= n && j <= n)
    out[i * pitch + j] = 0.25f * (in[(i - 1) * pitch + j] + in[(i + 1) * pitch + j] + in[i * pitch + j - 1] +
                                  in[i * pitch + j + 1]);
}
__global__ void seven_point_kernel(const float* in, float* out, std::size_t n) {
  const std::size_t k = blockIdx.x * blockDim.x + threadIdx.x + 1;
  const std::size_t j = blockIdx.y * blockDim.y + threadIdx.y + 1;
  const std::size_t p = n + 2;
  for (std::size_t i = blockIdx.z + 1; i <= n; i += gridDim.z)
    if (j <= n && k <= n) {
      const std::size_t c = (i * p + j) * p + k;
      out[c] = (1.0f / 6.0f) * (in[c - p * p] + in[c + p * p] + in[c - p] + in[c + p] + in[c - 1] + in[c + 1]);
    }
}

template <std::size_t Rank>
void stencil(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::int64_t shape = state.range(0);
  const bool overlapped = state.range(1) != 0;
  const mg::device_group g = group_for(shape);
  state.SetLabel(shape_name(shape) + (overlapped ? ", overlapped" : ", exchange first"));
  const std::size_t n = Rank == 2 ? 16384 : 512;
  mg::md_index<Rank> extents;
  extents.fill(n);
  std::size_t points = 1, padded = 1;
  for (std::size_t d = 0; d < Rank; ++d) {
    points *= n;
    padded *= n + 2;
  }
  {
    mg::mdarray_options<float, Rank> o;
    o.halo.fill(1);
    for (auto& b : o.boundaries) b.kind = mg::boundary_kind::periodic;
    mg::distributed_mdarray<float, Rank> a(extents, 1.0f, g, o), b(extents, 0.0f, g, a.options());
    const auto schedule = overlapped ? mg::stencil_schedule::overlapped : mg::stencil_schedule::exchange_first;
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float* in = nullptr;
    float* out = nullptr;
    MULTIGPU_CUDA_TRY(cudaMallocAsync(&in, padded * sizeof(float), stream));
    MULTIGPU_CUDA_TRY(cudaMallocAsync(&out, padded * sizeof(float), stream));
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(in, 0, padded * sizeof(float), stream));
    // A sample is `loop` calls back to back, as a solver's iterations run: the host enqueues the
    // next call while the GPU runs this one. (One call from an idle GPU would also time the
    // host's enqueueing of the first launches; that cost is stencil_host_cost below.)
    constexpr int loop = 10;
    auto ours = [&] {
      for (int k = 0; k < loop; ++k) {
        if constexpr (Rank == 2)
          mg::stencil_transform(a, b, five_point{}, schedule);
        else
          mg::stencil_transform(a, b, seven_point{}, schedule);
      }
    };
    auto baseline = [&] {
      for (int k = 0; k < loop; ++k) {
        if constexpr (Rank == 2) {
          const dim3 block(32, 8), grid(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((n + 7) / 8));
          five_point_kernel<<<grid, block, 0, stream>>>(in, out, n);
        } else {
          const dim3 block(32, 8), grid(static_cast<unsigned>((n + 31) / 32), static_cast<unsigned>((n + 7) / 8),
                                        static_cast<unsigned>(n));
          seven_point_kernel<<<grid, block, 0, stream>>>(in, out, n);
        }
      }
    };
    ours();
    baseline();
    const auto [ours_ms, baseline_ms, samples] = time_against_baseline(state, g, stream, ours, baseline, loop);
    const std::int64_t calls = samples * loop;
    const double bytes = 2.0 * static_cast<double>(points) * sizeof(float);
    // The manual time is one call's per sample.
    state.SetBytesProcessed(static_cast<std::int64_t>(bytes * static_cast<double>(samples)));
    state.counters["ours_ms"] = benchmark::Counter(ours_ms / static_cast<double>(calls));
    state.counters["baseline_ms"] = benchmark::Counter(baseline_ms / static_cast<double>(calls));
    state.counters["ratio_vs_baseline"] = benchmark::Counter(baseline_ms / ours_ms);
    state.counters["calls_per_sample"] = benchmark::Counter(loop);
    MULTIGPU_CUDA_TRY(cudaFreeAsync(in, stream));
    MULTIGPU_CUDA_TRY(cudaFreeAsync(out, stream));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}

void stencil_args(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1, 4};
  if (mg::visible_device_count() > 1) shapes.push_back(0);
  for (std::int64_t shape : shapes)
    for (std::int64_t overlapped : {1, 0}) b->Args({shape, overlapped});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.2);
}

BENCHMARK(stencil<2>)->Name("stencil_2d_5point_16384")->Apply(stencil_args);
BENCHMARK(stencil<3>)->Name("stencil_3d_7point_512")->Apply(stencil_args);

void halo_face(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const bool column = state.range(0) != 0;
  constexpr std::size_t face = 16384, across = 256;
  const mg::device_group g = group_for(2);
  state.SetLabel(std::string(column ? "column face (strided)" : "row face (contiguous)") + ", 2 slot(s) on GPU 0");
  {
    mg::mdarray_options<float, 2> o;
    o.halo = {1, 1};
    o.grid = column ? mg::md_index<2>{1, 2} : mg::md_index<2>{2, 1};
    const mg::md_index<2> extents = column ? mg::md_index<2>{face, across} : mg::md_index<2>{across, face};
    mg::distributed_mdarray<float, 2> a(extents, 1.0f, g, o);
    // The baseline: the same array unsplit, with its frame; the two faces move between the
    // middle of the array and its frame, each as one cudaMemcpy2DAsync.
    const std::size_t rows = extents[0] + 2, cols = extents[1] + 2, pitch = cols * sizeof(float);
    mg::device_guard guard(0);
    cudaStream_t stream = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float* buffer = nullptr;
    MULTIGPU_CUDA_TRY(cudaMallocAsync(&buffer, rows * pitch, stream));
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(buffer, 0, rows * pitch, stream));
    auto ours = [&] { mg::exchange_halos(a); };
    auto baseline = [&] {
      // The interior's rows 1..face: column across/2 -> column 0 and column across/2 + 1 ->
      // column cols - 1, or row across/2 -> row 0 and row across/2 + 1 -> row rows - 1 (the
      // interior's columns 1..face), each face exactly the face the library moves.
      if (column) {
        MULTIGPU_CUDA_TRY(cudaMemcpy2DAsync(buffer + cols, pitch, buffer + cols + across / 2, pitch, sizeof(float), face,
                                            cudaMemcpyDeviceToDevice, stream));
        MULTIGPU_CUDA_TRY(cudaMemcpy2DAsync(buffer + 2 * cols - 1, pitch, buffer + cols + across / 2 + 1, pitch,
                                            sizeof(float), face, cudaMemcpyDeviceToDevice, stream));
      } else {
        MULTIGPU_CUDA_TRY(cudaMemcpy2DAsync(buffer + 1, pitch, buffer + across / 2 * cols + 1, pitch,
                                            face * sizeof(float), 1, cudaMemcpyDeviceToDevice, stream));
        MULTIGPU_CUDA_TRY(cudaMemcpy2DAsync(buffer + (rows - 1) * cols + 1, pitch, buffer + (across / 2 + 1) * cols + 1,
                                            pitch, face * sizeof(float), 1, cudaMemcpyDeviceToDevice, stream));
      }
    };
    for (int i = 0; i < 3; ++i) {
      ours();
      baseline();
    }
    const auto [ours_ms, baseline_ms, calls] = time_against_baseline(state, g, stream, ours, baseline);
    state.SetBytesProcessed(static_cast<std::int64_t>(2 * face * sizeof(float)) * calls);
    state.counters["ours_us"] = benchmark::Counter(1000.0 * ours_ms / static_cast<double>(calls));
    state.counters["memcpy2d_us"] = benchmark::Counter(1000.0 * baseline_ms / static_cast<double>(calls));
    state.counters["ratio_vs_memcpy2d"] = benchmark::Counter(baseline_ms / ours_ms);
    MULTIGPU_CUDA_TRY(cudaFreeAsync(buffer, stream));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
    MULTIGPU_CUDA_TRY(cudaStreamDestroy(stream));
  }
  release_cached(g);
}
BENCHMARK(halo_face)->Name("halo_face_16384")->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);

void stencil_host_cost(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  static const mg::dispatch_policy policies[] = {mg::dispatch_policy::caller_thread,
                                                 mg::dispatch_policy::worker_threads, mg::dispatch_policy::graph};
  static const char* names[] = {"caller thread", "worker threads", "graph replay"};
  mg::group_options options;
  options.dispatch = policies[state.range(0)];
  const mg::device_group g = group_for(4, options);
  state.SetLabel(shape_name(4) + ", " + names[state.range(0)]);
  {
    mg::mdarray_options<float, 2> o;
    o.halo = {1, 1};
    for (auto& b : o.boundaries) b.kind = mg::boundary_kind::periodic;
    mg::distributed_mdarray<float, 2> a({256, 256}, 1.0f, g, o), b({256, 256}, 0.0f, g, a.options());
    constexpr int batch = 16;  // calls enqueued between two waits: far below any launch queue's depth
    for (int i = 0; i < 3; ++i) mg::stencil_transform(a, b, five_point{});
    g.synchronize();
    double host_us = 0;
    std::int64_t calls = 0;
    for (auto _ : state) {
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) mg::stencil_transform(a, b, five_point{});
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      g.synchronize();
      host_us += us;
      calls += batch;
      state.SetIterationTime(us / 1e6 / batch);
    }
    state.counters["host_us_per_call"] = benchmark::Counter(host_us / static_cast<double>(calls));
  }
  release_cached(g);
}
BENCHMARK(stencil_host_cost)->DenseRange(0, 2)->UseManualTime()->Unit(benchmark::kMicrosecond)->MinTime(0.2);

}  // namespace

BENCHMARK_MAIN();
