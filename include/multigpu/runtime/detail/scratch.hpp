#pragma once
// Persistent scratch of the executor, one per slot, owned by the group. Algorithms need
// temporary storage (CUB's), a few arrays of their own (block partials of the order-keeping
// reduction) and, on the slot that roots a collective, room for the partials and carries of
// every piece. Allocating those per call cost a pool round trip each; here they are kept,
// grown on demand and reused in stream order:
// - temporary and auxiliary storage are used only by work on the slot's own stream, so the
//   next call on that stream reuses them after the previous one by stream order alone;
// - the partials arena of a root is written by the other slots' steps and read by the root's
//   fold; the collective protocol (runtime/detail/collective_sync.hpp) orders its uses, so
//   that they never overlap. This file holds memory only.
// Scratch comes from a pool of its own per device (peer access granted like the data pools'),
// so that the data pools' use counters show only data and in-flight temporaries.

#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/pinned_buffer.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace multigpu::detail {

class slot_scratch {
 public:
  /// `generation` counts, for the whole group, every time a slot's scratch moves.
  slot_scratch(int device, cudaStream_t stream, device_pool& pool, std::atomic<std::uint64_t>& generation);
  ~slot_scratch();
  slot_scratch(const slot_scratch&) = delete;
  slot_scratch& operator=(const slot_scratch&) = delete;

  int device() const noexcept { return device_; }
  int multiprocessors() const noexcept { return multiprocessors_; }

  /// At least `bytes` of device memory for CUB's temporary storage, valid for work enqueued
  /// on this slot's stream until the next call of temporary().
  void* temporary(std::size_t bytes) { return grow(temporary_, bytes); }
  /// The temporary-storage size of a CUB call, remembered per (call, item count): `call`
  /// identifies the call site and its types, `query()` asks CUB when the pair is not known.
  /// A few entries, direct mapped: steady-state calls skip CUB's size query.
  template <class Query>
  std::size_t temporary_size(const void* call, std::size_t items, Query&& query) {
    size_entry& e = sizes_[(reinterpret_cast<std::uintptr_t>(call) + 7 * items) % size_entries];
    if (e.call == call && e.items == items) return e.bytes;
    const std::size_t bytes = query();
    e = {call, items, bytes};
    return bytes;
  }
  /// Like temporary(), a second region for a step's own arrays.
  void* auxiliary(std::size_t bytes) { return grow(auxiliary_, bytes); }
  /// Device memory for the partials of a collective rooted at this slot (device route).
  void* partials(std::size_t bytes) { return grow(partials_, bytes); }
  /// Pinned, mapped host memory for the partials of a collective rooted at this slot
  /// (host-mapped route). Outgrown blocks are kept until the group dies: a kernel of an
  /// earlier call may still write them.
  void* mapped_partials(std::size_t bytes);

  /// Device bytes held by this slot's scratch.
  std::size_t device_bytes() const noexcept { return temporary_.capacity + auxiliary_.capacity + partials_.capacity; }
  std::size_t host_bytes() const noexcept;

 private:
  struct region {
    void* data = nullptr;
    std::size_t capacity = 0;
  };
  struct size_entry {
    const void* call = nullptr;
    std::size_t items = 0;
    std::size_t bytes = 0;
  };
  static constexpr std::size_t size_entries = 16;
  size_entry sizes_[size_entries]{};
  void* grow(region& r, std::size_t bytes);

  std::atomic<std::uint64_t>* generation_;
  int device_;
  cudaStream_t stream_;
  device_pool* pool_;
  int multiprocessors_ = 0;
  region temporary_, auxiliary_, partials_;
  std::vector<pinned_buffer> mapped_;  // the last one is current
};

class group_scratch;

/// Held for one collective call: the group scratch's mutex and the owning thread (one
/// collective at a time uses a group's arenas and partials). A thread that
/// already holds it (a reduce_segments callback that starts another collective on the same
/// group) gets std::logic_error instead of a deadlock or a corrupted arena.
class scratch_lock {
 public:
  explicit scratch_lock(group_scratch& state);
  ~scratch_lock();
  scratch_lock(const scratch_lock&) = delete;
  scratch_lock& operator=(const scratch_lock&) = delete;

 private:
  group_scratch* state_;
};

/// The algorithms' scratch for a group: scratch per slot and the lock that makes one collective
/// call at a time use it (calls from several host threads on one group enqueue in turn).
class group_scratch {
 public:
  group_scratch(const std::vector<int>& slot_devices, const std::vector<cudaStream_t>& streams,
                 const std::vector<device_pool*>& scratch_pools);
  slot_scratch& slot(std::size_t s) { return *slots_.at(s); }
  /// Bytes held by every slot's scratch, on the devices and pinned on the host.
  std::size_t device_bytes() const noexcept;
  std::size_t host_bytes() const noexcept;
  /// Changes whenever any slot's scratch is reallocated: work captured into a graph before
  /// then points at memory that may be gone (runtime/detail/graph_replay.hpp).
  std::uint64_t generation() const noexcept { return generation_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> generation_{0};
  std::mutex mutex_;
  std::atomic<std::thread::id> owner_{};
  std::vector<std::unique_ptr<slot_scratch>> slots_;
  friend class scratch_lock;
};

}  // namespace multigpu::detail
