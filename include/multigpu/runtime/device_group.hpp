#pragma once
// The one-time multi-GPU set-up, done once and shared: device selection, the peer-to-peer
// capability matrix, peer access enabled (and checked) where supported, a memory pool per
// device, a non-blocking stream per slot, event pools and pinned staging memory. Every
// vector on a group holds a handle to it, so a group never dies under its data; the last
// handle tears it down in a safe order.

#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/resource_ref.hpp>
#include <multigpu/runtime/topology.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace multigpu {

/// Who enqueues each slot's work: the calling thread, slot after slot (the default), one
/// persistent thread per slot, or (graph) the calling thread once into a CUDA graph that is
/// then replayed. Under graph, the collectives (reduce, transform_reduce, dot, count,
/// min/max_element, both scans) are captured per call site, pieces and types, and replayed
/// while the call's pointers and values stay the same; other values update the graph in
/// place, another layout recaptures it (runtime/detail/graph_replay.hpp, docs/architecture.md).
/// Other algorithms run as under caller_thread. On one GPU, graph costs the least per extra
/// segment, for a coarser ordering (a collective waits for every slot's earlier work); the
/// default keeps slots independent. Figures (benchmarks/merge_routes.cu, segment_overhead):
/// docs/performance.md.
enum class dispatch_policy { caller_thread, worker_threads, graph };

/// Where a vector's segments live. pooled: stream-ordered device memory from the device's
/// pool (the default). managed: one cudaMallocManaged allocation per segment, preferred
/// location and prefetch on the slot's device; host reads and writes of single elements go
/// straight to that memory. Needs concurrent managed access on every device of the group
/// (std::invalid_argument otherwise). Device work runs at the same speed on both; single
/// host reads are faster pooled (docs/performance.md).
enum class storage { pooled, managed };

struct group_options {
  peer_policy peers = peer_policy::automatic;
  merge_policy merge = merge_policy::automatic;
  dispatch_policy dispatch = dispatch_policy::caller_thread;
  /// Streams the user owns, one per slot, each on its slot's device; empty (the default):
  /// the group creates a non-blocking stream per slot. The group orders all its work on
  /// them and never destroys them: they must outlive the group and every vector on it (the
  /// group synchronises them when it is torn down). Several slots may share a stream.
  /// std::invalid_argument when the count differs from the number of slots, a stream is
  /// the legacy or per-thread default stream, or belongs to another device than its slot.
  std::vector<cudaStream_t> streams{};
  multigpu::storage storage = multigpu::storage::pooled;
  /// Where vector segments come from: one memory resource per slot (several slots may share
  /// one), each allocating memory of its slot's device; empty (the default): the device
  /// pools. Every segment of every vector on the group (temporaries made by algorithms
  /// included) is taken with allocate_async(bytes, max(256, alignof(T)), slot stream) with
  /// the slot's device current, and given back with deallocate_async on the same stream, so
  /// destroying a vector while its kernels run stays safe. Empty segments ask for nothing.
  /// Algorithms' own scratch (CUB temporary storage, partials, staging) still comes from the
  /// pools.
  /// The group holds references only: the resources must outlive the group and every
  /// vector on it. std::invalid_argument when the count differs from the number of slots
  /// or with storage::managed. A resource that returns nullptr makes the allocation throw
  /// multigpu::out_of_memory; one that throws lets its exception through; either way the
  /// segments already made are given back. deallocate_async must not throw.
  std::vector<device_resource_ref> resources{};
};

class device_group;
namespace detail {
class group_resources;
class executor;
/// What a group has: devices, streams, pools, events, staging, scratch and peer links
/// (runtime/detail/group_resources.hpp). Internal: the container and transfer layers use it.
group_resources& resources_of(const device_group& group) noexcept;
/// How a group runs calls (runtime/detail/executor.hpp): the algorithms' one way into a group,
/// which hands their steps what they need. Extensions go through the public API
/// (for_each_segment, reduce_segments, exchange_halos).
executor& executor_of(const device_group& group) noexcept;
}

/// A cheap, copyable handle to shared state. A slot is one position in the group: a vector
/// on the group has one segment per slot. The same device may fill several slots, each
/// with its own stream; that is how multi-segment logic runs on a single GPU.
class device_group {
 public:
  /// Every visible GPU, one slot each.
  static device_group all(group_options options = {});
  /// The listed CUDA ordinals, one slot each; ids may repeat. Throws std::invalid_argument
  /// for an empty list or an id outside [0, visible devices), and a clear error when no
  /// device is visible.
  explicit device_group(std::vector<int> device_ids, group_options options = {});

  std::size_t size() const;
  int device(std::size_t slot) const;
  cudaStream_t stream(std::size_t slot) const;
  const std::vector<int>& devices() const;
  const group_options& options() const;

  /// True when copies from slot `from` to slot `to` go over a peer link.
  bool peer_enabled(std::size_t from, std::size_t to) const;
  /// The path a copy from slot `from` to slot `to` takes.
  copy_route route_between(std::size_t from, std::size_t to) const;
  /// The peer link from the device of slot `from` to the device of slot `to`: whether CUDA
  /// reports it, whether this group enabled it, and whether a test copy over it arrived
  /// intact. Two slots of one device have no peer link (every field false).
  /// std::out_of_range for a slot out of range.
  peer_link link(std::size_t from, std::size_t to) const;
  /// Where partial results of multi-slot reductions (or scans) meet on this group.
  merge_route merge(merge_kind kind = merge_kind::reduction) const;

  /// The memory pool of a slot's device (shared by the slots of one device).
  device_pool& pool(std::size_t slot) const;
  /// Where the segments of vectors and arrays on this group come from on `slot`: the slot's
  /// resource in options().resources, managed memory with storage::managed, else the pool.
  device_resource_ref segment_resource(std::size_t slot) const;
  /// Device bytes held by the executor's persistent scratch (CUB temporary storage,
  /// partials and carries), apart from the pools' use counters.
  std::size_t scratch_bytes() const;
  /// Makes slot `consumer`'s stream wait for the work enqueued on slot `producer` so far.
  void order(std::size_t producer, std::size_t consumer) const;
  /// Waits for every slot's stream.
  void synchronize() const;
  /// Makes every slot's stream wait for `event` (recorded by the user on any stream of any
  /// device), without a host wait: work the group enqueues afterwards starts after it.
  /// std::invalid_argument for a null event; CUDA errors throw multigpu::cuda_error.
  void wait(cudaEvent_t event) const;
  /// Records `event` (created on the device of `slot`) on the stream of `slot` after joining
  /// every other slot's stream into it, so that `event` completes once all work enqueued
  /// on the group so far, on every slot, is done. No host wait. std::out_of_range for a slot
  /// out of range, std::invalid_argument for a null event, multigpu::cuda_error when CUDA
  /// refuses the record (an event of another device, say).
  void record(cudaEvent_t event, std::size_t slot = 0) const;
  /// Devices, the P2P matrix (supported / enabled / verified / host staged) and pools.
  std::string describe() const;

  friend bool operator==(const device_group& a, const device_group& b) noexcept {
    return a.resources_ == b.resources_;
  }

 private:
  friend detail::group_resources& detail::resources_of(const device_group& group) noexcept;
  friend detail::executor& detail::executor_of(const device_group& group) noexcept;
  // The executor draws on the resources and keeps them alive; it goes first.
  std::shared_ptr<detail::group_resources> resources_;
  std::shared_ptr<detail::executor> executor_;
};

inline detail::group_resources& detail::resources_of(const device_group& group) noexcept { return *group.resources_; }
inline detail::executor& detail::executor_of(const device_group& group) noexcept { return *group.executor_; }

/// The group of every visible GPU, created on first use (thread-safe) and kept for the
/// life of the process.
device_group default_group();

/// Number of CUDA devices this process can use: 0 when there is no device or no driver.
int visible_device_count() noexcept;

}  // namespace multigpu
