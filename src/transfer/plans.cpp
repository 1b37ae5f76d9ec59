#include <multigpu/core/error.hpp>
#include <multigpu/transfer/chunking.hpp>
#include <multigpu/transfer/copy_plan.hpp>

#include <algorithm>

namespace multigpu::transfer {

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

std::size_t total_count(std::span<const piece> pieces) noexcept {
  std::size_t total = 0;
  for (const piece& p : pieces) total += p.count;
  return total;
}

namespace {
/// The elements the pieces cover: std::length_error saying `too_many` when the sum does not
/// fit the size type (a wrapped total could match the other side's and plan a partial copy).
std::size_t checked_total(std::span<const piece> pieces, const char* too_many) {
  std::size_t total = 0;
  for (const piece& p : pieces) total = detail::checked_add(total, p.count, too_many);
  return total;
}
}  // namespace

std::vector<move> plan_moves(std::span<const piece> source, std::span<const piece> destination) {
  const std::size_t src_total =
      checked_total(source, "plan_moves: the source pieces cover more elements than the size type holds");
  const std::size_t dst_total =
      checked_total(destination, "plan_moves: the destination pieces cover more elements than the size type holds");
  MULTIGPU_EXPECTS(src_total == dst_total,
                   detail::concat("plan_moves: the source covers ", src_total,
                                  " elements but the destination covers ", dst_total));
  std::vector<move> moves;
  std::size_t si = 0, di = 0;        // current pieces
  std::size_t s_used = 0, d_used = 0;  // elements consumed within them
  while (si < source.size() && di < destination.size()) {
    const piece& s = source[si];
    const piece& d = destination[di];
    std::size_t n = std::min(s.count - s_used, d.count - d_used);
    if (n > 0) moves.push_back({s.slot, s.local_offset + s_used, d.slot, d.local_offset + d_used, n});
    s_used += n;
    d_used += n;
    if (s_used == s.count) {
      ++si;
      s_used = 0;
    }
    if (d_used == d.count) {
      ++di;
      d_used = 0;
    }
  }
  return moves;
}

}  // namespace multigpu::transfer
