#pragma once
// The ordering protocol of a collective call, in one place. A collective's local steps run on
// every participating slot's stream and meet in the root slot's arena (its partials and
// carries); the root's fold (or carry scan) consumes them. The rules:
// - the local steps of one call never wait for each other: each non-root step waits only for
//   the root's fork event, recorded when the call starts, after the arena's earlier readers;
// - the root's fold waits for every step it consumes (their done events);
// - on the error path the root still waits for every step that started, so the arena is
//   never reused under a kernel still writing it;
// - slots that read the arena after the call returned (a scan's carries) are its readers: the
//   next call rooted there, or a growth of the arena, waits for them first.
// collective_sync owns the events and bookkeeping per slot; collective_call runs the rules for
// one call on the streams it is handed (the slots' own, or a graph's capture streams). A graph
// replay (runtime/graph_replay.cpp) brackets a launched graph with gather() and scatter(), and
// after a capture records the done events again on the slots' own streams (rerecord()).
// slot_scratch (runtime/detail/scratch.hpp) holds only memory.
//
// Implementations: src/runtime/collective_sync.cpp.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/event.hpp>
#include <multigpu/core/piece.hpp>
#include <multigpu/runtime/detail/executor.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace multigpu::detail {

class collective_sync {
 public:
  /// One state per slot, its events on the slot's device; `streams` are the slots' own.
  collective_sync(const std::vector<int>& devices, const std::vector<cudaStream_t>& streams);
  collective_sync(const collective_sync&) = delete;
  collective_sync& operator=(const collective_sync&) = delete;

  /// The root's own stream waits for the slots that read its arena after an earlier call
  /// returned, and they are forgotten. Before anything rewrites the arena or frees it.
  void join_readers(std::size_t root);

  // ---- Around a graph launched on the root's own stream (graph replay).
  /// The root's own stream follows the arena's readers and everything enqueued so far on the
  /// other participating slots' own streams.
  void gather(std::size_t root, std::span<const piece> pieces);
  /// Every participating slot's own stream follows the root's (through its fork event).
  void scatter(std::size_t root, std::span<const piece> pieces);
  /// After a capture, whatever became of it: the done events (and with `with_fork` the root's
  /// fork) recorded again on the slots' own streams. A capture recorded them on the capture
  /// streams, and a later wait on an event last recorded in a capture waits on no real work.
  void rerecord(std::size_t root, std::span<const piece> pieces, bool with_fork);
  /// rerecord() on an error path: the error being thrown is the one the caller sees.
  void rerecord_quietly(std::size_t root, std::span<const piece> pieces) noexcept;

 private:
  friend class collective_call;
  struct slot_state {
    explicit slot_state(int device) : fork(device), done(device) {}
    event fork;                         // recorded on the root when a call it roots starts
    event done;                         // recorded on a slot when its step is enqueued
    std::vector<std::size_t> readers;   // slots reading this root's arena after the last call
    std::vector<char> entered;          // per piece of the current call rooted here: started?
  };
  slot_state& at(std::size_t slot) { return *slots_[slot]; }

  std::vector<int> devices_;
  std::vector<cudaStream_t> streams_;
  std::vector<std::unique_ptr<slot_state>> slots_;
};

/// One collective call over `pieces`, enqueued on `streams`: forks the slots from the root
/// (pieces[0]'s slot) and joins them back on it, also when unwinding. The caller holds the
/// scratch lock.
class collective_call {
 public:
  collective_call(collective_sync& sync, std::span<const piece> pieces, const slot_streams& streams);
  ~collective_call();
  collective_call(const collective_call&) = delete;
  collective_call& operator=(const collective_call&) = delete;

  std::size_t root() const noexcept { return root_; }
  cudaStream_t root_stream() const noexcept { return streams_[root_]; }
  int root_device() const noexcept { return sync_.devices_[root_]; }

  /// Before piece ctx.index's step touches the arena: its stream follows the fork.
  void enter(const piece_context& ctx);
  /// After piece ctx.index's step is enqueued: its work is marked done for the root to join.
  void leave(const piece_context& ctx);
  /// The root waits for every step that entered.
  void join();
  /// A second round reads what the root wrote after join(): the root records its fork again
  /// and the next round's steps wait for it.
  void start_next_round();
  /// The steps of the last round read the arena after the call returns (scans read their
  /// carries): they become the arena's readers. In a graph capture, where every stream must
  /// end joined to the root, the root joins them instead.
  void end_with_readers();

 private:
  void mark_done(std::size_t slot);  // the slot's done event, recorded on its own stream
  collective_sync& sync_;
  collective_sync::slot_state& root_state_;
  slot_streams streams_;
  std::span<const piece> pieces_;
  std::size_t root_;
  device_guard guard_;
  bool joined_ = false;
};

}  // namespace multigpu::detail
