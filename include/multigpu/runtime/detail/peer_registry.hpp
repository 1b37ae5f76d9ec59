#pragma once
// Process-wide bookkeeping of peer access. Peer access belongs to a device's context, which
// every group on that device shares, so enabling and disabling is reference counted: the
// first group that needs a direction enables it, the last one to let go disables it, and
// access that something outside this library enabled is never disabled by us.

#include <multigpu/runtime/topology.hpp>

#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace multigpu::detail {

class peer_registry {
 public:
  static peer_registry& instance();

  bool can_access(int from, int to);
  /// Enables access from `from` to `to` if needed; returns false when the driver refuses.
  bool acquire(int from, int to);
  void release(int from, int to) noexcept;
  void set_verified(int from, int to, bool verified);
  /// Known state of every ordered pair among `device_count` devices: what live groups
  /// enabled and verified. Used for copies between vectors of different groups.
  peer_matrix snapshot(int device_count);

  /// Groups that hold access from `from` to `to`: the reference count.
  int holders(int from, int to);

  void set_forced_failure(int from, int to, bool fail);
  bool forced_failure(int from, int to);

 private:
  std::mutex mutex_;
  std::map<std::pair<int, int>, int> can_access_;  // cached cudaDeviceCanAccessPeer, 0/1
  std::map<std::pair<int, int>, int> references_;
  std::set<std::pair<int, int>> enabled_by_us_;
  std::set<std::pair<int, int>> verified_;
  std::set<std::pair<int, int>> forced_failures_;
};

}  // namespace multigpu::detail
