#pragma once
// Pure host decisions about how data moves between devices, kept apart from CUDA calls so
// that they are tested without a GPU. The inputs are what device set-up learnt: which
// ordered device pairs can access each other (cudaDeviceCanAccessPeer is asymmetric),
// which of those this process enabled, and which passed a data check.

#include <cstddef>
#include <string_view>
#include <vector>

namespace multigpu {

/// How a group moves data between its devices.
enum class peer_policy {
  automatic,   ///< peer copies where supported and verified, host staging elsewhere
  host_staged  ///< never peer: every move between slots goes through pinned host memory
};

/// The path one device-to-device copy takes.
enum class route {
  same_device,  ///< both ends on one device: a device-to-device copy
  peer,         ///< cudaMemcpyPeerAsync over NVLink or PCIe P2P
  host_staged   ///< device to pinned host memory to device, double buffered
};

std::string_view to_string(route r) noexcept;

/// What is known about access from one device to another's memory.
struct peer_link {
  bool can_access = false;  ///< cudaDeviceCanAccessPeer(from, to)
  bool enabled = false;     ///< cudaDeviceEnablePeerAccess succeeded (or was already on)
  bool verified = false;    ///< a known pattern copied over the link arrived intact
  /// Direct loads and copies may use this link.
  bool usable() const noexcept { return can_access && enabled && verified; }
};

/// Links between every ordered pair of a set of devices, indexed by CUDA ordinal.
class peer_matrix {
 public:
  peer_matrix() = default;
  explicit peer_matrix(std::size_t device_count)
      : count_(device_count), links_(device_count * device_count) {}
  std::size_t device_count() const noexcept { return count_; }
  peer_link& at(int from, int to) { return links_[index(from, to)]; }
  const peer_link& at(int from, int to) const { return links_[index(from, to)]; }

 private:
  std::size_t index(int from, int to) const;
  std::size_t count_ = 0;
  std::vector<peer_link> links_;
};

/// Which way a copy from `from_device` to `to_device` goes, and which side issues it.
struct copy_route {
  route kind = route::host_staged;
  /// For peer copies: true when the destination pulls (it can access the source), false
  /// when the source pushes. Same-device copies are issued by the destination.
  bool issued_by_destination = true;
  friend bool operator==(const copy_route&, const copy_route&) = default;
};

/// Peer copies need a usable link in at least one direction; the destination pulls when
/// it may, since its stream is where the data is consumed. host_staged forces the host
/// path even between slots of one device, which is how that path is tested on one GPU.
copy_route choose_route(peer_policy policy, int from_device, int to_device,
                        const peer_matrix& links);

/// Where the partial results of a multi-slot reduction or scan meet.
enum class merge_route {
  host_mapped,  ///< zero-copy slots in pinned, mapped host memory: reachable from every device
  device        ///< an array in one device's memory, written and read directly or over peers
};

/// Preference for the merge route; automatic takes the one measured faster for each kind
/// of operation (see choose_merge_route).
enum class merge_policy { automatic, host_mapped, device };

/// What the partials are for: one fold into a result (reductions), or carries for every
/// slot (scans).
enum class merge_kind { reduction, scan };

std::string_view to_string(merge_route r) noexcept;

/// The device route needs every slot to reach the root's memory directly (same device, or
/// a usable link both ways); otherwise partials meet in mapped host memory.
merge_route choose_merge_route(merge_policy policy, peer_policy peers,
                               const std::vector<int>& slot_devices, std::size_t root_slot,
                               const peer_matrix& links, merge_kind kind = merge_kind::reduction);

}  // namespace multigpu
