#pragma once
// Device-to-device moves between the segments of one group or of two groups. Each move
// takes the route the topology allows: a copy on one device, a peer copy
// (cudaMemcpyPeerAsync) over a verified link, or staging through pinned host memory in
// double-buffered chunks. Ordering is by events between the streams involved; the host
// never waits. Each copy follows the earlier work of the streams it runs after (a direct
// copy: both sides'; a staged one: its download the source's, its upload the destination's).
// Afterwards later work on the destination's streams sees the copied data, and the source's
// stream follows every read of the source, so it may be freed or overwritten on that stream.

#include <cstddef>
#include <span>

namespace multigpu {
class device_group;
namespace detail {
class group_resources;
}
}  // namespace multigpu

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

/// Enqueues `moves` from segments of `source_group` to segments of `destination_group` (the
/// same group or two groups): pointers are device memory of the named slots' devices, and
/// each move's bytes are valid at its source and destination. Returns without a host wait;
/// later work on the destination slots' streams sees the data. CUDA errors throw
/// multigpu::cuda_error, staging memory that cannot be had throws multigpu::out_of_memory.
void copy_between(const device_group& source_group, const device_group& destination_group,
                  std::span<const byte_move> moves);

void copy_between(detail::group_resources& source_group, detail::group_resources& destination_group,
                  std::span<const byte_move> moves);

}  // namespace multigpu::transfer
