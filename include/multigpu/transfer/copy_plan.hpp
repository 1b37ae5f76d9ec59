#pragma once
// Pure planning of a redistribution: given where the elements of a global range live on
// the source side and where they must go on the destination side (each a list of pieces
// in global order), list the contiguous moves from one segment to another.

#include <multigpu/core/piece.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace multigpu::transfer {

/// Plans speak of the container's pieces (container/piece.hpp).
using multigpu::piece;

/// Elements [src_offset, src_offset + count) of segment src_slot go to
/// [dst_offset, dst_offset + count) of segment dst_slot.
struct move {
  std::size_t src_slot;
  std::size_t src_offset;
  std::size_t dst_slot;
  std::size_t dst_offset;
  std::size_t count;
  friend bool operator==(const move&, const move&) = default;
};

/// Walks both piece lists in global order and emits one move for every overlap. Both
/// lists must cover the same number of elements (std::invalid_argument otherwise). Empty
/// pieces are skipped; the moves are in global order and never empty.
std::vector<move> plan_moves(std::span<const piece> source, std::span<const piece> destination);

/// Total elements covered by a piece list.
std::size_t total_count(std::span<const piece> pieces) noexcept;

}  // namespace multigpu::transfer
