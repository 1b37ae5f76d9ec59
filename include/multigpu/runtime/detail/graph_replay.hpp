#pragma once
// dispatch_policy::graph: a collective's multi-stream schedule captured once into a CUDA graph
// and replayed.
//
// How a call runs:
// - The scratch lock is held (the caller's). The root slot's own stream first waits for
//   every other participating stream (so the graph follows what was enqueued on them before),
//   and afterwards every participating stream waits for the graph: the slots' streams keep
//   their order exactly as if each had run its step itself.
// - Replay: when a call's fingerprint (the call site, its pieces and their pointers, and every
//   value the enqueued work depends on) and the scratch's generation equal those the graph
//   was captured with, the graph is launched as is. A reduction's result address, which
//   changes per call, is written into the graph's last kernel first.
// - Otherwise the collective is captured again, on private capture streams handed to the
//   enqueueing code (other threads keep using the slots' streams), and the executable graph
//   is updated in place with cudaGraphExecUpdate: new pointers, sizes, init values. When the topology
//   changed (another number of pieces, another CUB kernel sequence) it is instantiated anew.
// - A step that would allocate during capture (the scratch must grow first) makes the call run
//   eagerly instead; one that allocates every time (a pool temporary) is never captured again.
// - An exception during capture leaves nothing enqueued: the capture is discarded.
// Executable graphs are kept per (call site, pieces), up to four variants each (so that calls
// alternating between two outputs, ping-pong buffers, or a few init values all replay), in a
// cache of 64 that drops the least recently used.

#include <multigpu/runtime/detail/executor.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace multigpu::detail {

class group_resources;

class graph_replay {
 public:
  /// Replays on `own`, the slots' own streams.
  graph_replay(group_resources& group, const slot_streams& own);
  ~graph_replay();
  graph_replay(const graph_replay&) = delete;
  graph_replay& operator=(const graph_replay&) = delete;

  /// Runs the collective of `plan` as a graph: enqueue(streams) enqueues it on the streams
  /// given (the slots' own, or the capture streams); see the top of this file. Needs the
  /// scratch lock.
  void run(const collective_plan& plan, function_ref<void(const slot_streams&)> enqueue);

  /// Diagnostics: launches of a cached graph as is, captures (updates and instantiations),
  /// instantiations alone, and calls that ran eagerly.
  struct counters {
    std::uint64_t replays = 0, captures = 0, instantiations = 0, eager = 0;
  };
  counters stats() const noexcept { return stats_; }

 private:
  struct entry;
  entry* find(const void* site, std::span<const piece> pieces, const call_fingerprint& fingerprint,
              bool needs_result, bool& eager_only);
  entry& make_room(const void* site, std::span<const piece> pieces, const call_fingerprint& fingerprint);
  void launch(entry& e, std::size_t root);
  void ensure_capture_streams();
  void renew_capture_streams() noexcept;

  group_resources* group_;
  slot_streams own_;
  std::vector<cudaStream_t> capture_streams_;  // per slot; slots sharing a stream share one
  std::vector<std::unique_ptr<entry>> entries_;
  std::uint64_t clock_ = 0;  // for least recently used
  counters stats_;
};

}  // namespace multigpu::detail
