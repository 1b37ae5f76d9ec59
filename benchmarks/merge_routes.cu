// How per-device partials should meet: in pinned, mapped host memory (zero-copy, works on
// any topology) or in the first slot's device memory (direct or over peers). Measured on a
// reduction and a scan across slots, with the group forced to each route. (The cost of a
// call and of one more segment: bench_call_overhead.)
//
// Arguments: {n, shape, route}: route 0 = host mapped, 1 = device.

#include "bench_support.hpp"


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

}  // namespace

BENCHMARK_MAIN();
