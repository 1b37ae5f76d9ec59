#include <multigpu/core/error.hpp>
#include <multigpu/memory/detail/chunking.hpp>

#include <algorithm>

namespace multigpu::detail {

std::vector<chunk> split_into_chunks(std::size_t bytes, std::size_t chunk_bytes, std::size_t piece) {
  MULTIGPU_EXPECTS(chunk_bytes > 0, "split_into_chunks: the chunk size must be positive");
  std::vector<chunk> chunks;
  chunks.reserve(bytes / chunk_bytes + (bytes % chunk_bytes != 0 ? 1 : 0));
  // offset + n never passes bytes, so the offset cannot wrap, whatever the sizes.
  for (std::size_t offset = 0; offset < bytes;) {
    const std::size_t n = std::min(chunk_bytes, bytes - offset);
    chunks.push_back({piece, offset, n});
    offset += n;
  }
  return chunks;
}

std::vector<chunk> interleave_chunks(std::span<const std::size_t> piece_bytes,
                                     std::size_t chunk_bytes) {
  MULTIGPU_EXPECTS(chunk_bytes > 0, "interleave_chunks: the chunk size must be positive");
  std::size_t rounds = 0, total = 0;
  for (std::size_t b : piece_bytes) {
    const std::size_t n = b / chunk_bytes + (b % chunk_bytes != 0 ? 1 : 0);  // no b + chunk - 1 to wrap
    rounds = std::max(rounds, n);
    total += n;
  }
  std::vector<chunk> chunks;
  chunks.reserve(total);
  for (std::size_t round = 0; round < rounds; ++round) {
    for (std::size_t p = 0; p < piece_bytes.size(); ++p) {
      std::size_t offset = round * chunk_bytes;
      if (offset < piece_bytes[p])
        chunks.push_back({p, offset, std::min(chunk_bytes, piece_bytes[p] - offset)});
    }
  }
  return chunks;
}

}  // namespace multigpu::detail
