// Host <-> device streaming. multigpu's construction from a pageable std::vector and its
// gather back, against what a user would otherwise do: cudaMemcpy from pageable memory,
// cudaMemcpy from pinned memory, and the physical bound for pageable data, the host's own
// memcpy bandwidth (pageable data must be copied once into pinned memory), one thread and
// many. All in one binary so the ratios come from one run.
//
// Arguments: {n floats, shape} (shape 0: every visible GPU, k > 0: k slots on GPU 0).

#include "bench_support.hpp"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using namespace bench;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::vector<float> pageable(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; i += 1024) v[i] = static_cast<float>(i);  // touch every page
  return v;
}

void to_devices(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)) + ", pageable source");
  auto host = pageable(n);
  {
    mg::distributed_vector<float> v(n, g);
    mg::copy(host.begin(), host.end(), v.begin());  // warm-up: staging workers and buffers
    g.synchronize();
    for (auto _ : state) {
      auto t0 = clock_type::now();
      mg::copy(host.begin(), host.end(), v.begin());
      g.synchronize();
      state.SetIterationTime(seconds_since(t0));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

/// Pinned host memory is copied by DMA directly, with no staging.
void to_devices_pinned(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)) + ", pinned source");
  mg::pinned_buffer host(n * sizeof(float), mg::pinned_buffer::mapping::none);
  std::memset(host.data(), 1, host.size());
  auto* data = static_cast<const float*>(host.data());
  {
    mg::distributed_vector<float> v(n, g);
    mg::copy(data, data + n, v.begin());
    for (auto _ : state) {
      auto t0 = clock_type::now();
      mg::copy(data, data + n, v.begin());
      state.SetIterationTime(seconds_since(t0));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

void construct_from_vector(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)) + ", distributed_vector(std::vector)");
  auto host = pageable(n);
  { mg::distributed_vector<float> warm(host, g); }
  for (auto _ : state) {
    auto t0 = clock_type::now();
    mg::distributed_vector<float> v(host, g);
    g.synchronize();
    state.SetIterationTime(seconds_since(t0));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

void to_host(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)) + ", pageable destination");
  auto host = pageable(n);
  {
    mg::distributed_vector<float> v(n, 1.0f, g);
    mg::copy(v.begin(), v.end(), host.begin());
    for (auto _ : state) {
      auto t0 = clock_type::now();
      mg::copy(v.begin(), v.end(), host.begin());
      state.SetIterationTime(seconds_since(t0));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

void to_vector_gather(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_for(state.range(1));
  state.SetLabel(shape_name(state.range(1)) + ", to_vector (allocates)");
  {
    mg::distributed_vector<float> v(n, 1.0f, g);
    (void)mg::to_vector(v);
    for (auto _ : state) {
      auto t0 = clock_type::now();
      auto back = mg::to_vector(v);
      state.SetIterationTime(seconds_since(t0));
      benchmark::DoNotOptimize(back.data());
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  release_cached(g);
}

/// cudaMemcpy on device 0, from (or to) pageable or pinned memory.
void plain_memcpy(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const bool pinned = state.range(1) != 0;
  const bool to_device = state.range(2) != 0;
  state.SetLabel(std::string("cudaMemcpy ") + (to_device ? "to device from " : "to host into ") +
                 (pinned ? "pinned" : "pageable") + " memory");
  const std::size_t bytes = n * sizeof(float);
  std::vector<float> pageable_host;
  mg::pinned_buffer pinned_host;
  void* host = nullptr;
  if (pinned) {
    pinned_host = mg::pinned_buffer(bytes, mg::pinned_buffer::mapping::none);
    std::memset(pinned_host.data(), 1, bytes);
    host = pinned_host.data();
  } else {
    pageable_host = pageable(n);
    host = pageable_host.data();
  }
  void* device = nullptr;
  MULTIGPU_CUDA_TRY(cudaSetDevice(0));
  MULTIGPU_CUDA_TRY(cudaMalloc(&device, bytes));  // the user's baseline, not library code
  auto once = [&] {
    if (to_device)
      MULTIGPU_CUDA_TRY(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
    else
      MULTIGPU_CUDA_TRY(cudaMemcpy(host, device, bytes, cudaMemcpyDeviceToHost));
  };
  once();
  for (auto _ : state) {
    auto t0 = clock_type::now();
    once();
    state.SetIterationTime(seconds_since(t0));
  }
  MULTIGPU_CUDA_TRY(cudaFree(device));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
}

/// The host's own copy bandwidth between two pageable buffers with `threads` threads.
void host_memcpy(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto threads = static_cast<std::size_t>(state.range(1));
  state.SetLabel("host memcpy, " + std::to_string(threads) + " thread(s)");
  auto a = pageable(n), b = pageable(n);
  auto once = [&] {
    std::vector<std::thread> pool;
    const std::size_t part = (n + threads - 1) / threads;
    for (std::size_t t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::size_t begin = std::min(n, t * part), end = std::min(n, begin + part);
        std::memcpy(b.data() + begin, a.data() + begin, (end - begin) * sizeof(float));
      });
    for (auto& t : pool) t.join();
  };
  once();
  for (auto _ : state) {
    auto t0 = clock_type::now();
    once();
    state.SetIterationTime(seconds_since(t0));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
}

void transfer_sizes(benchmark::internal::Benchmark* b) {
  std::vector<std::int64_t> shapes{1};
  if (mg::visible_device_count() > 1) shapes.push_back(0);
  for (std::int64_t n : {std::int64_t{1} << 28, std::int64_t{1} << 30})
    for (std::int64_t s : shapes) b->Args({n, s});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.5);
}

BENCHMARK(to_devices)->Apply(transfer_sizes);
BENCHMARK(to_devices_pinned)->Apply(transfer_sizes);
BENCHMARK(construct_from_vector)->Apply(transfer_sizes);
BENCHMARK(to_host)->Apply(transfer_sizes);
BENCHMARK(to_vector_gather)->Apply(transfer_sizes);
BENCHMARK(plain_memcpy)
    ->ArgsProduct({{std::int64_t{1} << 28, std::int64_t{1} << 30}, {0, 1}, {1, 0}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);
BENCHMARK(host_memcpy)
    ->ArgsProduct({{std::int64_t{1} << 28, std::int64_t{1} << 30}, {1, 4, 8, 16}})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

}  // namespace

BENCHMARK_MAIN();
