#pragma once
// Shared pieces of the benchmarks: group shapes by number, event timing across all of a
// group's streams, and the Thrust baseline's stream.

#include <multigpu/multigpu.hpp>

#include <benchmark/benchmark.h>

#include <map>
#include <mutex>
#include <string>

namespace bench {

namespace mg = multigpu;

/// Shape 0 is every visible GPU (one slot each); shape k > 0 is k slots on device 0.
inline mg::device_group group_for(std::int64_t shape, mg::group_options options = {}) {
  static std::mutex mutex;
  static std::map<std::pair<std::int64_t, int>, mg::device_group> groups;
  std::lock_guard lock(mutex);
  auto key = std::pair{shape, static_cast<int>(options.peers) * 64 + static_cast<int>(options.merge) * 8 +
                                  static_cast<int>(options.dispatch) +
                                  static_cast<int>(options.storage) * 512};
  auto it = groups.find(key);
  if (it != groups.end()) return it->second;
  mg::device_group g = shape == 0 ? mg::device_group::all(options)
                                  : mg::device_group(std::vector<int>(static_cast<std::size_t>(shape), 0), options);
  groups.emplace(key, g);
  return g;
}

inline std::string shape_name(std::int64_t shape) {
  return shape == 0 ? "all GPUs (" + std::to_string(mg::visible_device_count()) + ")"
                    : std::to_string(shape) + " slot(s) on GPU 0";
}

/// Gives back the pools' cached memory so that one benchmark's sizes do not crowd the next.
inline void release_cached(const mg::device_group& g) {
  g.synchronize();
  for (std::size_t s = 0; s < g.size(); ++s) g.pool(s).trim(0);
}

/// Times f with events: start on slot 0's stream, every other slot waits for it, f runs,
/// slot 0 waits for every other slot, stop. Covers work spread over all streams and devices.
template <class F>
double time_group_ms(const mg::device_group& g, F&& f) {
  mg::device_guard guard(g.device(0));
  mg::event start(g.device(0), cudaEventDefault), stop(g.device(0), cudaEventDefault);
  start.record(g.stream(0));
  for (std::size_t s = 1; s < g.size(); ++s) g.order(0, s);
  f();
  for (std::size_t s = 1; s < g.size(); ++s) g.order(s, 0);
  stop.record(g.stream(0));
  stop.synchronize();
  return mg::event::elapsed_ms(start, stop);
}

/// Times f on one stream of device 0 (the Thrust baseline).
template <class F>
double time_stream_ms(cudaStream_t stream, F&& f) {
  mg::event start(0, cudaEventDefault), stop(0, cudaEventDefault);
  start.record(stream);
  f();
  stop.record(stream);
  stop.synchronize();
  return mg::event::elapsed_ms(start, stop);
}

/// Records the figures every benchmark reports: our bytes per second (through manual
/// time), Thrust's, and the speed-up over Thrust from the same run.
inline void report(benchmark::State& state, double bytes_per_call, double ours_ms_total, double thrust_ms_total,
                   std::int64_t calls) {
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes_per_call * static_cast<double>(calls)));
  if (thrust_ms_total > 0) {
    state.counters["thrust_bytes_per_second"] =
        benchmark::Counter(bytes_per_call * static_cast<double>(calls) / (thrust_ms_total / 1000.0));
    state.counters["speedup_vs_thrust"] = benchmark::Counter(thrust_ms_total / ours_ms_total);
  }
  state.counters["ours_ms"] = benchmark::Counter(ours_ms_total / static_cast<double>(calls));
  if (thrust_ms_total > 0) state.counters["thrust_ms"] = benchmark::Counter(thrust_ms_total / static_cast<double>(calls));
}

/// What time_against_baseline measured: milliseconds summed over the iterations, and how many.
struct loop_times {
  double ours_ms = 0;
  double baseline_ms = 0;
  std::int64_t calls = 0;
};

/// The loop of a benchmark with one baseline: every iteration times `ours` across the group
/// and `baseline` on `stream`, and reports ours per call as the manual time (`calls_per_sample`:
/// how many calls each of them makes). Returns the totals over the samples, for the caller's
/// figures.
template <class Ours, class Baseline>
loop_times time_against_baseline(benchmark::State& state, const mg::device_group& g, cudaStream_t stream, Ours&& ours,
                                 Baseline&& baseline, int calls_per_sample = 1) {
  loop_times t;
  for (auto _ : state) {
    const double mine = time_group_ms(g, ours);
    t.baseline_ms += time_stream_ms(stream, baseline);
    t.ours_ms += mine;
    ++t.calls;
    state.SetIterationTime(mine / 1000.0 / calls_per_sample);
  }
  return t;
}

/// The loop of a benchmark with one Thrust baseline (time_against_baseline), then the figures.
template <class Ours, class Theirs>
void time_against_thrust(benchmark::State& state, const mg::device_group& g, cudaStream_t stream, Ours&& ours,
                         Theirs&& theirs, double bytes_per_call) {
  const loop_times t = time_against_baseline(state, g, stream, ours, theirs);
  report(state, bytes_per_call, t.ours_ms, t.baseline_ms, t.calls);
}

inline bool skip_without_gpu(benchmark::State& state) {
  if (mg::visible_device_count() > 0) return false;
  state.SkipWithError("no CUDA device is visible");
  return true;
}

}  // namespace bench
