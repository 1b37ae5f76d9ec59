#pragma once
// Pure planning of a halo exchange: which boundary elements of which segment fill which
// halo. Neighbours are the next non-empty segments to the left and right (and, for periodic
// vectors, the last and first ones wrap around).

#include <multigpu/container/distribution.hpp>

#include <cstddef>
#include <vector>

namespace multigpu {

struct halo_move {
  std::size_t src_slot;
  std::size_t src_offset;  ///< first element, as a local index among src's own elements
  std::size_t dst_slot;
  bool to_left;            ///< fills dst's left halo (else its right halo)
  std::size_t count;       ///< the halo width
  friend bool operator==(const halo_move&, const halo_move&) = default;
};

/// Every non-empty segment must hold at least `width` elements (std::invalid_argument naming
/// the slot, its size and the width otherwise): a halo then comes from one neighbour.
std::vector<halo_move> plan_halo_exchange(const distribution& layout, std::size_t width, bool periodic);

}  // namespace multigpu
