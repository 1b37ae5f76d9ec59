#pragma once
// Pure arithmetic for pipelined copies through pinned memory: how a transfer is cut into chunks
// so that copies overlap (double buffering) and so that every device is fed at once. The host
// stager (host_stager.hpp) and the transfers' staged copies both cut this way; the public names
// are in <multigpu/transfer/chunking.hpp>.

#include <cstddef>
#include <span>
#include <vector>

namespace multigpu::detail {

/// Chunk size for host <-> device streaming through pinned buffers: large enough that a
/// DMA costs far more than its launch, small enough that the CPU copy into the next
/// buffer overlaps it.
inline constexpr std::size_t host_chunk_bytes = std::size_t{4} << 20;
/// Chunk size for device -> host -> device staging between devices without a peer link.
inline constexpr std::size_t staged_chunk_bytes = std::size_t{8} << 20;

/// One chunk of one piece of a transfer.
struct chunk {
  std::size_t piece;   ///< index of the piece it belongs to
  std::size_t offset;  ///< byte offset within the piece
  std::size_t bytes;
  friend bool operator==(const chunk&, const chunk&) = default;
};

/// Cuts one piece of `bytes` into chunks of at most `chunk_bytes`.
std::vector<chunk> split_into_chunks(std::size_t bytes, std::size_t chunk_bytes,
                                     std::size_t piece = 0);

/// Cuts every piece into chunks and interleaves them round-robin (chunk 0 of every piece,
/// then chunk 1, ...) so that workers taking chunks in order keep all devices busy at once.
/// Empty pieces give no chunks.
std::vector<chunk> interleave_chunks(std::span<const std::size_t> piece_bytes,
                                     std::size_t chunk_bytes);

}  // namespace multigpu::detail
