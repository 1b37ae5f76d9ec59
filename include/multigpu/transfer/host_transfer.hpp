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

/// From this many bytes on, prefault_host touches a fresh allocation on several threads.
inline constexpr std::size_t prefault_bytes = std::size_t{64} << 20;
/// Maps the pages of freshly allocated host memory [host, host + bytes) before it is first
/// written: huge pages where the system allows them, and one write per page, split over
/// several threads. First-touch page faults on one thread otherwise dominate filling a new
/// host buffer (to_vector into a new std::vector). The bytes' values are unspecified
/// afterwards; below prefault_bytes it does nothing.
void prefault_host(void* host, std::size_t bytes);

}  // namespace multigpu::transfer
