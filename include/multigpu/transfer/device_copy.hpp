#pragma once
// Device-to-device moves between the segments of one group or of two groups. Each move
// takes the route the topology allows: a copy on one device, a peer copy
// (cudaMemcpyPeerAsync) over a verified link, or staging through pinned host memory in
// double-buffered chunks. Ordering is by events between the streams involved; the host
// never waits. Afterwards later work on either side's streams sees the copied data, and
// the source may be freed or overwritten safely.

#include <cstddef>
#include <span>

namespace multigpu::detail {
class group_state;
}

namespace multigpu::transfer {

/// `bytes` from `source` in slot src_slot of the source group to `destination` in slot
/// dst_slot of the destination group.
struct byte_move {
  std::size_t src_slot;
  const void* source;
  std::size_t dst_slot;
  void* destination;
  std::size_t bytes;
};

void copy_between(detail::group_state& source_group, detail::group_state& destination_group,
                  std::span<const byte_move> moves);

}  // namespace multigpu::transfer
