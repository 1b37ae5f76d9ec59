#pragma once
// What a device_group has, apart from how it runs calls: devices, streams, pools, events,
// staging, the algorithms' scratch and the peer links. Internal: the container and transfer
// layers use it directly; the algorithms get what they need from the executor
// (runtime/detail/executor.hpp), which draws on it; users go through device_group.

#include <multigpu/core/event_pool.hpp>
#include <multigpu/core/stream.hpp>
#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/collective_sync.hpp>
#include <multigpu/runtime/detail/scratch.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace multigpu::detail {

class host_stager;

/// The peer-access pairs a group holds in the process-wide registry, each released once:
/// by release() in the group's ordered teardown, or by the destructor when the group's
/// constructor throws after enabling them.
class peer_holds {
 public:
  peer_holds() = default;
  peer_holds(const peer_holds&) = delete;
  peer_holds& operator=(const peer_holds&) = delete;
  ~peer_holds() { release(); }
  /// Makes room for n pairs, so that add() after a successful acquisition cannot throw.
  void reserve(std::size_t n) { pairs_.reserve(n); }
  void add(int from, int to) noexcept { pairs_.push_back({from, to}); }
  void release() noexcept;
  const std::vector<std::pair<int, int>>& pairs() const noexcept { return pairs_; }

 private:
  std::vector<std::pair<int, int>> pairs_;
};

class group_resources {
 public:
  group_resources(std::vector<int> devices, group_options options);
  ~group_resources();
  group_resources(const group_resources&) = delete;
  group_resources& operator=(const group_resources&) = delete;

  std::size_t size() const noexcept { return slot_devices_.size(); }
  int device(std::size_t slot) const { return slot_devices_.at(slot); }
  cudaStream_t stream(std::size_t slot) const { return raw_streams_.at(slot); }
  /// Every slot's stream, by slot.
  const std::vector<cudaStream_t>& streams() const noexcept { return raw_streams_; }
  const std::vector<int>& devices() const noexcept { return slot_devices_; }
  const group_options& options() const noexcept { return options_; }
  const peer_matrix& links() const noexcept { return links_; }

  device_pool& pool(std::size_t slot) const;
  device_pool& pool_of_device(int device) const;
  event_pool& events() noexcept { return events_; }
  /// The algorithms' persistent scratch per slot and the lock of collective calls
  /// (runtime/detail/scratch.hpp).
  group_scratch& scratch() noexcept { return *scratch_; }
  /// The events and bookkeeping that order the collectives' steps
  /// (runtime/detail/collective_sync.hpp).
  collective_sync& sync() noexcept { return *sync_; }
  staging_pool& staging() noexcept { return staging_; }
  /// The process-wide workers that stream pageable host memory through pinned buffers.
  host_stager& stager();

  copy_route route_between(std::size_t from, std::size_t to) const;
  merge_route merge(merge_kind kind) const noexcept {
    return kind == merge_kind::reduction ? reduction_merge_ : scan_merge_;
  }
  void order(std::size_t producer, std::size_t consumer);
  /// Every one of `slots`' streams waits for the work enqueued so far on the others' (one
  /// event recorded per slot; the host never waits).
  void join(std::span<const std::size_t> slots);
  /// device_group::wait and device_group::record (slot already checked).
  void wait(cudaEvent_t event);
  void record(cudaEvent_t event, std::size_t slot);
  void synchronize() const;
  std::string describe() const;

 private:
  struct owned_device {
    int device;
    std::unique_ptr<device_pool> pool;
    std::unique_ptr<device_pool> scratch;  // the executor's scratch, apart from data
  };
  void enable_peers();
  void verify_peer(int from, int to);

  std::vector<int> slot_devices_;
  group_options options_;
  std::vector<owned_device> owned_;         // one per distinct device, in first-seen order
  peer_holds peers_;                        // pairs whose access this group holds
  peer_matrix links_;
  merge_route reduction_merge_ = merge_route::host_mapped;
  merge_route scan_merge_ = merge_route::host_mapped;
  // Declaration order is teardown order reversed: staging blocks hold pooled events, and
  // both must go before the pools and streams.
  std::vector<multigpu::stream> streams_;
  std::vector<cudaStream_t> raw_streams_;  // streams_ as handed out
  event_pool events_;
  staging_pool staging_{events_};
  std::mutex stager_mutex_;
  std::shared_ptr<host_stager> stager_;
  std::unique_ptr<group_scratch> scratch_;  // released before the pools it draws on
  std::unique_ptr<collective_sync> sync_;   // its events, before the streams
};

}  // namespace multigpu::detail
