// Managed storage (group_options::storage = storage::managed: cudaMallocManaged segments,
// preferred location and prefetch on their devices) against pooled device memory (the
// default), on every visible GPU: transform, reduce and inclusive_scan at 2^24 and 2^28
// floats, then host reads (element by element, and the whole vector with to_vector).
//
// Arguments: {n, managed}. Device work is timed with events across the group's streams;
// host reads with the host clock.

#include "bench_support.hpp"

#include <chrono>
#include <random>

namespace {

using namespace bench;

mg::device_group group_of(std::int64_t managed) {
  mg::group_options options;
  options.storage = managed ? mg::storage::managed : mg::storage::pooled;
  return group_for(0, options);
}

void label(benchmark::State& state) {
  state.SetLabel(std::string(state.range(1) ? "managed" : "pooled") + ", " + shape_name(0));
}

struct saxpy {
  __host__ __device__ float operator()(float x) const { return 2.0f * x + 1.0f; }
};

void transform(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_of(state.range(1));
  label(state);
  {
    mg::distributed_vector<float> in(n, 1.0f, g), out(n, g);
    mg::transform(in, out, saxpy{});  // warm-up: first touch, pool growth
    for (auto _ : state) state.SetIterationTime(time_group_ms(g, [&] { mg::transform(in, out, saxpy{}); }) / 1000.0);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * n * sizeof(float)));
  }
  release_cached(g);
}

void reduce(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_of(state.range(1));
  label(state);
  {
    mg::distributed_vector<float> v(n, 1.0f, g);
    float sum = mg::reduce(v);
    for (auto _ : state) state.SetIterationTime(time_group_ms(g, [&] { sum = mg::reduce(v); }) / 1000.0);
    if (sum != static_cast<float>(n) && n <= (std::size_t{1} << 24)) state.SkipWithError("wrong sum");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  }
  release_cached(g);
}

void inclusive_scan(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_of(state.range(1));
  label(state);
  {
    mg::distributed_vector<float> in(n, 1.0f, g), out(n, g);
    mg::inclusive_scan(in, out);
    for (auto _ : state) state.SetIterationTime(time_group_ms(g, [&] { mg::inclusive_scan(in, out); }) / 1000.0);
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * 2 * n * sizeof(float)));
  }
  release_cached(g);
}

/// 1000 single elements at random places, each read after a device write to the vector
/// (as a program that inspects results between kernels does).
void host_reads(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_of(state.range(1));
  label(state);
  {
    mg::distributed_vector<float> v(n, 1.0f, g);
    std::mt19937_64 engine(17);
    std::uniform_int_distribution<std::size_t> where(0, n - 1);
    double total = 0;
    for (auto _ : state) {
      mg::fill(v, 2.0f);  // device work first: the pages are on the devices again
      g.synchronize();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 1000; ++i) total += v[where(engine)];
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    benchmark::DoNotOptimize(total);
    state.counters["reads_per_second"] =
        benchmark::Counter(1000.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  }
  release_cached(g);
}

/// The whole vector to host memory (to_vector: pageable, staged through pinned buffers).
void to_host(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const auto n = static_cast<std::size_t>(state.range(0));
  const mg::device_group g = group_of(state.range(1));
  label(state);
  {
    mg::distributed_vector<float> v(n, 1.0f, g);
    std::vector<float> host(n);
    for (auto _ : state) {
      mg::fill(v, 3.0f);
      g.synchronize();
      const auto start = std::chrono::steady_clock::now();
      mg::copy(v.begin(), v.end(), host.data());
      state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (host[n / 2] != 3.0f) state.SkipWithError("wrong value read back");
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(float)));
  }
  release_cached(g);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t log2n : {24, 28})
    for (std::int64_t managed : {0, 1}) b->Args({std::int64_t{1} << log2n, managed});
  b->UseManualTime()->Unit(benchmark::kMillisecond)->MinTime(0.1);
}

}  // namespace

BENCHMARK(transform)->Apply(sizes);
BENCHMARK(reduce)->Apply(sizes);
BENCHMARK(inclusive_scan)->Apply(sizes);
BENCHMARK(host_reads)->Apply(sizes);
BENCHMARK(to_host)->Apply(sizes);

BENCHMARK_MAIN();
