#include <multigpu/runtime/topology.hpp>

#include <multigpu/core/error.hpp>

#include <stdexcept>

namespace multigpu {

std::string_view to_string(route r) noexcept {
  switch (r) {
    case route::same_device: return "same device";
    case route::peer: return "peer";
    case route::host_staged: return "host staged";
  }
  return "unknown";
}

std::string_view to_string(merge_route r) noexcept {
  switch (r) {
    case merge_route::host_mapped: return "host mapped";
    case merge_route::device: return "device";
  }
  return "unknown";
}

std::size_t peer_matrix::index(int from, int to) const {
  MULTIGPU_EXPECTS_AS(from >= 0 && to >= 0 && static_cast<std::size_t>(from) < count_ &&
                          static_cast<std::size_t>(to) < count_,
                      std::out_of_range,
                      detail::concat("peer_matrix: device pair (", from, ", ", to,
                                     ") is outside a matrix of ", count_, " devices"));
  return static_cast<std::size_t>(from) * count_ + static_cast<std::size_t>(to);
}

copy_route choose_route(peer_policy policy, int from_device, int to_device,
                        const peer_matrix& links) {
  if (policy == peer_policy::host_staged) return {route::host_staged, true};
  if (from_device == to_device) return {route::same_device, true};
  if (links.at(to_device, from_device).usable()) return {route::peer, true};
  if (links.at(from_device, to_device).usable()) return {route::peer, false};
  return {route::host_staged, true};
}

merge_route choose_merge_route(merge_policy policy, peer_policy peers,
                               const std::vector<int>& slot_devices, std::size_t root_slot,
                               const peer_matrix& links, merge_kind kind) {
  MULTIGPU_EXPECTS(root_slot < slot_devices.size() || slot_devices.empty(),
                   detail::concat("choose_merge_route: root slot ", root_slot,
                                  " is outside a group of ", slot_devices.size(), " slots"));
  // A host-staged group keeps every exchange off device-to-device paths, merges included.
  if (policy == merge_policy::host_mapped || peers == peer_policy::host_staged ||
      slot_devices.empty())
    return merge_route::host_mapped;
  const int root = slot_devices[root_slot];
  bool reachable = true;
  for (int device : slot_devices) {
    if (device == root) continue;
    if (!links.at(device, root).usable() || !links.at(root, device).usable()) {
      reachable = false;
      break;
    }
  }
  if (!reachable) return merge_route::host_mapped;
  if (policy == merge_policy::device) return merge_route::device;
  // automatic, as measured by benchmarks/merge_routes.cu: reductions fold once on the root,
  // so partials in its memory beat zero-copy slots; scans have every slot read the partials,
  // and mapped host memory does as well or better there (figures: docs/performance.md).
  return kind == merge_kind::reduction ? merge_route::device : merge_route::host_mapped;
}

}  // namespace multigpu
