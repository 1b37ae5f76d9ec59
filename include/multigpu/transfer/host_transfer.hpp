#pragma once
// Moving bytes between host memory and the segments of a group: host to GPUs (scatter)
// and GPUs to host (gather). Pinned host memory is copied directly with cudaMemcpyAsync;
// pageable memory streams through the process's pinned staging workers, all devices fed
// at once; small pageable transfers go straight through the driver, whose own staging is
// cheaper than waking the workers.

#include <multigpu/memory/detail/host_stager.hpp>

#include <span>

namespace multigpu::detail {
class group_resources;
}

namespace multigpu::transfer {

using detail::device_piece;

/// Below this many bytes a pageable transfer goes through the driver directly.
inline constexpr std::size_t direct_pageable_bytes = std::size_t{1} << 20;

/// Copies host bytes [host, host + total) to the pieces in order. Returns when the host
/// memory may be reused; device work is ordered on each piece's stream.
void copy_host_to_devices(detail::group_resources& group, const void* host,
                          std::span<const device_piece> pieces);
/// Copies the pieces in order to host bytes. Returns when the host memory holds the data.
void copy_devices_to_host(detail::group_resources& group, void* host,
                          std::span<const device_piece> pieces);

}  // namespace multigpu::transfer
