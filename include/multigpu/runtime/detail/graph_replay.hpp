#pragma once
// dispatch_policy::graph: a collective's multi-stream schedule captured once into a CUDA graph
// and replayed.
//
// How a call runs:
// - The executor's lock is held (the caller's). The root slot's own stream first waits for
//   every other participating stream (so the graph follows what was enqueued on them before),
//   and afterwards every participating stream waits for the graph: the slots' streams keep
//   their order exactly as if each had run its step itself.
// - Replay: when a call's fingerprint (the call site, its pieces and their pointers, and every
//   value the enqueued work depends on) and the scratch's generation equal those the graph
//   was captured with, the graph is launched as is. A reduction's result address, which
//   changes per call, is written into the graph's last kernel first.
// - Otherwise the collective is captured again, on private capture streams of this thread
//   (other threads keep using the slots' streams), and the executable graph is updated in
//   place with cudaGraphExecUpdate: new pointers, sizes, init values. When the topology
//   changed (another number of pieces, another CUB kernel sequence) it is instantiated anew.
// - A step that would allocate during capture (the scratch must grow first) makes the call run
//   eagerly instead; one that allocates every time (a pool temporary) is never captured again.
// - An exception during capture leaves nothing enqueued: the capture is discarded.
// Executable graphs are kept per (call site, pieces), up to four variants each (so that calls
// alternating between two outputs, ping-pong buffers, or a few init values all replay), in a
// cache of 64 that drops the least recently used.

#include <multigpu/core/piece.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <type_traits>
#include <vector>

namespace multigpu::detail {

class group_state;

/// What a captured collective depends on, as bytes: the call site, the pieces, the device
/// pointers and the values (init, operators) that end up in its kernels' parameters. Two
/// calls with equal fingerprints enqueue the same work. A value that cannot be compared as
/// bytes (not trivially copyable) or too many of them make the fingerprint invalid: such
/// calls run eagerly, never replayed blindly.
class call_fingerprint {
 public:
  template <class X>
  void add(const X& x) noexcept {
    if constexpr (std::is_empty_v<X>) {
      return;  // an empty operator's one byte says nothing
    } else if constexpr (!std::is_trivially_copyable_v<X>) {
      valid_ = false;
    } else {
      if (size_ + sizeof(X) > capacity) {
        valid_ = false;
        return;
      }
      std::memcpy(bytes_ + size_, &x, sizeof(X));
      size_ += sizeof(X);
    }
  }
  template <class... X>
  void add_all(const X&... x) noexcept {
    (add(x), ...);
  }
  bool valid() const noexcept { return valid_; }
  friend bool operator==(const call_fingerprint& a, const call_fingerprint& b) noexcept {
    return a.valid_ && b.valid_ && a.size_ == b.size_ && std::memcmp(a.bytes_, b.bytes_, a.size_) == 0;
  }

 private:
  static constexpr std::size_t capacity = 1024;
  std::size_t size_ = 0;
  bool valid_ = true;
  unsigned char bytes_[capacity];
};

/// The last kernel of a captured reduction, whose output address changes per call: replays
/// rewrite its parameters (cudaGraphExecKernelNodeSetParams) before launching.
struct result_kernel {
  void* function = nullptr;
  void** arguments = nullptr;
};

class graph_replay {
 public:
  explicit graph_replay(group_state& group);
  ~graph_replay();
  graph_replay(const graph_replay&) = delete;
  graph_replay& operator=(const graph_replay&) = delete;

  /// Runs enqueue(context), which enqueues one collective over `pieces` on the group's streams
  /// (pieces[0]'s slot is the root), as a graph; see the top of this file. `site` identifies
  /// the call site and its types. `result`, when given, is the kernel that ends the
  /// collective on the root, with this call's arguments. Needs the executor's lock.
  void run(const void* site, std::span<const piece> pieces, const call_fingerprint& fingerprint,
           void (*enqueue)(void*), void* context, const result_kernel* result);

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
  void join_before(std::size_t root, std::span<const piece> pieces);
  void release_after(std::size_t root, std::span<const piece> pieces);
  void settle_events(std::size_t root, std::span<const piece> pieces, bool with_fork);
  void settle_quietly(std::size_t root, std::span<const piece> pieces) noexcept;
  void launch(entry& e, std::size_t root);
  void ensure_capture_streams();
  void renew_capture_streams() noexcept;

  group_state* group_;
  std::vector<cudaStream_t> capture_streams_;  // per slot; slots sharing a stream share one
  std::vector<std::unique_ptr<entry>> entries_;
  std::uint64_t clock_ = 0;  // for least recently used
  counters stats_;
};

/// Runs `enqueue()` eagerly, or through the group's graph_replay under dispatch_policy::graph
/// (`graphs` not null) for a call that has a fingerprint.
template <class Enqueue>
void enqueue_or_replay(graph_replay* graphs, const void* site, std::span<const piece> pieces,
                    const call_fingerprint* fingerprint, Enqueue& enqueue, const result_kernel* result = nullptr) {
  if (graphs == nullptr || fingerprint == nullptr) {
    enqueue();
    return;
  }
  graphs->run(site, pieces, *fingerprint, [](void* c) { (*static_cast<Enqueue*>(c))(); }, &enqueue, result);
}

}  // namespace multigpu::detail
