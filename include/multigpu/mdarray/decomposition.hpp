#pragma once
// Pure host planning of distributed N-D arrays (docs/mdarray.md): how the extents split over a
// grid of slots, which grid a group gets by default, which boxes fill which halos, and the
// regions a stencil computes before and after its halos arrive. No CUDA calls, so that the
// CPU tests cover it.
//
// Words: a tile is one slot's part of the array; its *interior* holds the slot's own elements,
// its *padded* box adds the halo of width w[d] on both sides of every dimension. Coordinates
// in a tile are padded coordinates unless a name says otherwise; tiles are row-major.

#include <multigpu/core/error.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace multigpu {

/// A multi-index or a size in each of Rank dimensions (dimension 0 is the slowest).
template <std::size_t Rank>
using md_index = std::array<std::size_t, Rank>;

/// What lies beyond the array in one dimension, as its halos see it.
enum class boundary_kind {
  none,      ///< nothing: the outer halos are left as they are
  periodic,  ///< the array wraps around: the last elements neighbour the first
  fixed      ///< a constant: the outer halos hold the dimension's boundary value
};

/// An axis-aligned box: [start[d], start[d] + extent[d]) in every dimension.
template <std::size_t Rank>
struct md_box {
  md_index<Rank> start{};
  md_index<Rank> extent{};
  std::size_t count() const noexcept {
    std::size_t n = 1;
    for (std::size_t e : extent) n *= e;
    return n;
  }
  bool empty() const noexcept { return count() == 0; }
  friend bool operator==(const md_box&, const md_box&) = default;
};

namespace detail {

template <std::size_t Rank>
std::string format_index(const md_index<Rank>& index, const char* separator = ", ") {
  std::string text;
  for (std::size_t d = 0; d < Rank; ++d) {
    if (d > 0) text += separator;
    text += std::to_string(index[d]);
  }
  return text;
}

template <std::size_t Rank>
std::size_t product(const md_index<Rank>& index) noexcept {
  std::size_t n = 1;
  for (std::size_t e : index) n *= e;
  return n;
}

/// Offsets of n elements split over p parts as the vectors split them (distribution::block:
/// sizes differ by at most one, larger parts first); p + 1 entries.
inline std::vector<std::size_t> block_offsets(std::size_t n, std::size_t p) {
  std::vector<std::size_t> offsets(p + 1, 0);
  for (std::size_t c = 0; c < p; ++c) offsets[c + 1] = offsets[c] + n / p + (c < n % p ? 1 : 0);
  return offsets;
}

}  // namespace detail

/// How a Rank-dimensional array of `extents` splits over a grid of slots: grid[d] parts in
/// dimension d, each a block split of extents[d]. Slot s sits at the row-major position of s
/// in the grid. Tiles of extents smaller than the grid are empty (zero elements).
template <std::size_t Rank>
class md_decomposition {
  static_assert(Rank >= 1, "an N-D decomposition needs at least one dimension");

 public:
  md_decomposition() : md_decomposition(md_index<Rank>{}, ones()) {}
  /// std::invalid_argument when a grid dimension is zero.
  md_decomposition(const md_index<Rank>& extents, const md_index<Rank>& grid) : extents_(extents), grid_(grid) {
    for (std::size_t d = 0; d < Rank; ++d) {
      MULTIGPU_EXPECTS(grid[d] > 0, detail::concat("distributed_mdarray: the grid (", detail::format_index(grid, " x "),
                                                   ") has no part in dimension ", d));
      offsets_[d] = detail::block_offsets(extents[d], grid[d]);
    }
  }
  /// Parts given by their offsets: part c of dimension d is [offsets[d][c], offsets[d][c + 1]),
  /// so the grid has offsets[d].size() - 1 parts in dimension d (a team's tiles: each rank's
  /// box split over its slots). std::invalid_argument unless every list starts at 0, ends at the
  /// extent, never decreases and has at least two entries.
  md_decomposition(const md_index<Rank>& extents, std::array<std::vector<std::size_t>, Rank> offsets)
      : extents_(extents), offsets_(std::move(offsets)) {
    for (std::size_t d = 0; d < Rank; ++d) {
      const auto& o = offsets_[d];
      MULTIGPU_EXPECTS(o.size() >= 2 && o.front() == 0 && o.back() == extents[d] && std::is_sorted(o.begin(), o.end()),
                       detail::concat("md_decomposition: the part offsets of dimension ", d,
                                      " must run from 0 to the extent ", extents[d], " without decreasing"));
      grid_[d] = o.size() - 1;
    }
  }

  /// The grid with the least halo surface for `slots` slots (smallest total area of the faces
  /// between tiles, each dimension weighted by its halo width, at least 1). Grids that leave
  /// tiles empty are taken only when every grid does; among equal surfaces the one that
  /// splits the slowest dimensions most wins (slabs before pencils before blocks: their faces
  /// are the most contiguous).
  static md_index<Rank> choose_grid(const md_index<Rank>& extents, std::size_t slots,
                                    const md_index<Rank>& halo_widths = {}) {
    MULTIGPU_EXPECTS(slots > 0, "distributed_mdarray: a group has at least one slot");
    md_index<Rank> best{};
    std::tuple<std::size_t, double, md_index<Rank>> best_key{};
    bool have = false;
    md_index<Rank> grid{};
    // Every ordered factorisation of `slots` into Rank factors.
    const std::function<void(std::size_t, std::size_t)> visit = [&](std::size_t d, std::size_t left) {
      if (d + 1 == Rank) {
        grid[d] = left;
        std::size_t full = 1;  // tiles that hold elements
        for (std::size_t e = 0; e < Rank; ++e) full *= std::min(grid[e], extents[e]);
        double surface = 0;
        for (std::size_t e = 0; e < Rank; ++e) {
          double face = static_cast<double>(std::max<std::size_t>(halo_widths[e], 1));
          for (std::size_t f = 0; f < Rank; ++f)
            if (f != e) face *= static_cast<double>(extents[f]);
          surface += static_cast<double>(grid[e] - 1) * face;
        }
        md_index<Rank> negated{};  // larger slow-dimension splits first
        for (std::size_t e = 0; e < Rank; ++e) negated[e] = std::numeric_limits<std::size_t>::max() - grid[e];
        auto key = std::make_tuple(slots - full, surface, negated);
        if (!have || key < best_key) {
          best_key = key;
          best = grid;
          have = true;
        }
        return;
      }
      for (std::size_t f = 1; f <= left; ++f)
        if (left % f == 0) {
          grid[d] = f;
          visit(d + 1, left / f);
        }
    };
    visit(0, slots);
    return best;
  }

  const md_index<Rank>& extents() const noexcept { return extents_; }
  const md_index<Rank>& grid() const noexcept { return grid_; }
  std::size_t size() const noexcept { return detail::product(extents_); }
  std::size_t slot_count() const noexcept { return detail::product(grid_); }

  /// The grid position of slot s (row-major).
  md_index<Rank> position(std::size_t slot) const {
    MULTIGPU_EXPECTS_AS(slot < slot_count(), std::out_of_range,
                        detail::concat("distributed_mdarray: slot ", slot, " of a grid of ", slot_count()));
    md_index<Rank> c{};
    for (std::size_t d = Rank; d-- > 0;) {
      c[d] = slot % grid_[d];
      slot /= grid_[d];
    }
    return c;
  }
  std::size_t slot_at(const md_index<Rank>& position) const noexcept {
    std::size_t s = 0;
    for (std::size_t d = 0; d < Rank; ++d) s = s * grid_[d] + position[d];
    return s;
  }
  /// Where part `c` of dimension d starts, and how long it is.
  std::size_t part_offset(std::size_t d, std::size_t c) const { return offsets_[d].at(c); }
  std::size_t part_extent(std::size_t d, std::size_t c) const { return offsets_[d].at(c + 1) - offsets_[d].at(c); }

  /// The global index of slot s's first interior element.
  md_index<Rank> tile_offset(std::size_t slot) const {
    const md_index<Rank> c = position(slot);
    md_index<Rank> o{};
    for (std::size_t d = 0; d < Rank; ++d) o[d] = offsets_[d][c[d]];
    return o;
  }
  /// The interior extents of slot s's tile (some zero for an empty tile).
  md_index<Rank> tile_extents(std::size_t slot) const {
    const md_index<Rank> c = position(slot);
    md_index<Rank> e{};
    for (std::size_t d = 0; d < Rank; ++d) e[d] = part_extent(d, c[d]);
    return e;
  }
  bool tile_empty(std::size_t slot) const { return detail::product(tile_extents(slot)) == 0; }

  /// The slot holding global index i, and i's interior coordinates there. std::out_of_range
  /// when i is outside the extents.
  std::pair<std::size_t, md_index<Rank>> locate(const md_index<Rank>& i) const {
    md_index<Rank> c{};
    md_index<Rank> local{};
    for (std::size_t d = 0; d < Rank; ++d) {
      MULTIGPU_EXPECTS_AS(i[d] < extents_[d], std::out_of_range,
                          detail::concat("distributed_mdarray: index (", detail::format_index(i),
                                         ") is outside the extents (", detail::format_index(extents_, " x "), ")"));
      // The last part starting at or before i[d]: empty parts start where the next begins.
      const auto& o = offsets_[d];
      c[d] = static_cast<std::size_t>(std::upper_bound(o.begin(), o.end(), i[d]) - o.begin()) - 1;
      local[d] = i[d] - o[c[d]];
    }
    return {slot_at(c), local};
  }

  friend bool operator==(const md_decomposition& a, const md_decomposition& b) {
    return a.extents_ == b.extents_ && a.grid_ == b.grid_ && a.offsets_ == b.offsets_;
  }

 private:
  static md_index<Rank> ones() {
    md_index<Rank> g{};
    g.fill(1);
    return g;
  }
  md_index<Rank> extents_{};
  md_index<Rank> grid_{};
  std::array<std::vector<std::size_t>, Rank> offsets_{};
};

/// The padded extents of a tile: interior plus 2 w[d] per dimension, all zero for an empty tile
/// (an empty tile stores nothing, halo included).
template <std::size_t Rank>
md_index<Rank> padded_extents(const md_index<Rank>& interior, const md_index<Rank>& widths) noexcept {
  md_index<Rank> p{};
  if (detail::product(interior) == 0) return p;
  for (std::size_t d = 0; d < Rank; ++d) p[d] = interior[d] + 2 * widths[d];
  return p;
}

/// The boxes one halo exchange moves, per (source slot, destination slot) pair.
template <std::size_t Rank>
struct halo_exchange_plan {
  /// Box `source` of slot src's padded tile goes to the box of the same extents at
  /// `destination` in slot dst's padded tile. Packed, it occupies [send_offset, + count) of
  /// src's send buffer and [recv_offset, + count) of dst's receive buffer.
  struct box_move {
    std::size_t src_slot;
    std::size_t dst_slot;
    md_box<Rank> source;
    md_index<Rank> destination;
    std::size_t send_offset;
    std::size_t recv_offset;
    friend bool operator==(const box_move&, const box_move&) = default;
  };
  /// All boxes from src to dst are packed next to each other, in the same order on both
  /// sides: one contiguous copy per pair. src == dst when a periodic dimension has one tile.
  struct pair_move {
    std::size_t src_slot;
    std::size_t dst_slot;
    std::size_t send_offset;
    std::size_t recv_offset;
    std::size_t count;
    friend bool operator==(const pair_move&, const pair_move&) = default;
  };
  /// A halo box outside the array in a fixed dimension: filled with that dimension's value.
  struct box_fill {
    std::size_t slot;
    md_box<Rank> region;
    std::size_t dimension;
    friend bool operator==(const box_fill&, const box_fill&) = default;
  };
  std::vector<box_move> moves;  ///< grouped by source slot, then destination slot
  std::vector<pair_move> pairs;
  std::vector<box_fill> fills;
  std::vector<std::size_t> send_count;  ///< elements of each slot's send buffer
  std::vector<std::size_t> recv_count;  ///< elements of each slot's receive buffer
};

namespace detail {

/// The nearest non-empty part of dimension d from part c in direction `step` (-1 or +1),
/// wrapping around when periodic; none (false) past the array's end otherwise.
template <std::size_t Rank>
bool neighbour_part(const md_decomposition<Rank>& layout, std::size_t d, std::size_t c, int step, bool periodic,
                    std::size_t& out) {
  const std::size_t p = layout.grid()[d];
  std::size_t at = c;
  for (std::size_t tried = 0; tried < p; ++tried) {
    if (step < 0) {
      if (at == 0) {
        if (!periodic) return false;
        at = p - 1;
      } else {
        --at;
      }
    } else {
      if (at + 1 == p) {
        if (!periodic) return false;
        at = 0;
      } else {
        ++at;
      }
    }
    if (layout.part_extent(d, at) > 0) {
      out = at;
      return true;
    }
  }
  return false;
}

}  // namespace detail

/// Checks that every halo comes from one neighbouring tile: in each dimension that exchanges
/// (periodic, or two or more non-empty parts), every non-empty tile is at least as wide as
/// the halo. std::length_error naming the tile otherwise.
template <std::size_t Rank>
void check_halo_fits(const md_decomposition<Rank>& layout, const md_index<Rank>& widths,
                     const std::array<boundary_kind, Rank>& boundaries) {
  for (std::size_t d = 0; d < Rank; ++d) {
    if (widths[d] == 0) continue;
    std::size_t non_empty = 0;
    for (std::size_t c = 0; c < layout.grid()[d]; ++c) non_empty += layout.part_extent(d, c) > 0 ? 1 : 0;
    if (non_empty == 0 || (non_empty == 1 && boundaries[d] != boundary_kind::periodic)) continue;
    for (std::size_t slot = 0; slot < layout.slot_count(); ++slot) {
      const md_index<Rank> e = layout.tile_extents(slot);
      if (detail::product(e) == 0 || e[d] >= widths[d]) continue;
      detail::throw_precondition<std::length_error>(
          detail::concat("distributed_mdarray: tile ", slot, " (grid position (",
                         detail::format_index(layout.position(slot)), "), extents ", detail::format_index(e, " x "),
                         ") is narrower than its halo in dimension ", d, " (width ", widths[d],
                         "): a halo must come from one neighbouring tile; use fewer slots in that dimension "
                         "(a grid in the array's options) or a narrower halo"),
          __FILE__, __LINE__);
    }
  }
}

/// Plans one exchange: for every non-empty tile and every direction (faces, edges and corners:
/// 3^Rank - 1 of them), the halo box there is filled straight from the tile that holds those
/// elements, so corners need no second round. A box outside the array goes to `fills` when the
/// lowest dimension in which it lies outside is fixed, and is left alone when that dimension's
/// boundary is none. Calls check_halo_fits first.
template <std::size_t Rank>
halo_exchange_plan<Rank> plan_halo_exchange(const md_decomposition<Rank>& layout, const md_index<Rank>& widths,
                                            const std::array<boundary_kind, Rank>& boundaries) {
  check_halo_fits(layout, widths, boundaries);
  using plan_t = halo_exchange_plan<Rank>;
  plan_t plan;
  const std::size_t slots = layout.slot_count();
  plan.send_count.assign(slots, 0);
  plan.recv_count.assign(slots, 0);
  // Boxes by (src, dst), in a deterministic order.
  std::map<std::pair<std::size_t, std::size_t>, std::vector<std::pair<md_box<Rank>, md_index<Rank>>>> by_pair;

  std::size_t directions = 1;
  for (std::size_t d = 0; d < Rank; ++d) directions *= 3;
  for (std::size_t dst = 0; dst < slots; ++dst) {
    const md_index<Rank> n = layout.tile_extents(dst);
    if (detail::product(n) == 0) continue;
    const md_index<Rank> c = layout.position(dst);
    for (std::size_t code = 0; code < directions; ++code) {
      std::array<int, Rank> delta{};
      std::size_t rest = code;
      bool centre = true;
      bool zero_width = false;
      for (std::size_t d = Rank; d-- > 0;) {
        delta[d] = static_cast<int>(rest % 3) - 1;
        rest /= 3;
        if (delta[d] != 0) {
          centre = false;
          if (widths[d] == 0) zero_width = true;
        }
      }
      if (centre || zero_width) continue;
      md_box<Rank> region;  // in dst's padded coordinates
      md_index<Rank> source_part = c;
      std::size_t outside = Rank;  // the lowest dimension in which the box is outside the array
      for (std::size_t d = 0; d < Rank; ++d) {
        const std::size_t w = widths[d];
        region.start[d] = delta[d] < 0 ? 0 : delta[d] == 0 ? w : w + n[d];
        region.extent[d] = delta[d] == 0 ? n[d] : w;
        if (delta[d] == 0) continue;
        std::size_t part = 0;
        if (detail::neighbour_part(layout, d, c[d], delta[d], boundaries[d] == boundary_kind::periodic, part))
          source_part[d] = part;
        else if (outside == Rank)
          outside = d;
      }
      if (outside < Rank) {
        if (boundaries[outside] == boundary_kind::fixed) plan.fills.push_back({dst, region, outside});
        continue;
      }
      const std::size_t src = layout.slot_at(source_part);
      const md_index<Rank> m = layout.tile_extents(src);
      md_box<Rank> source;  // in src's padded coordinates
      for (std::size_t d = 0; d < Rank; ++d) {
        const std::size_t w = widths[d];
        // Below us: the source's last w; above: its first w; level: its interior (as wide as ours).
        source.start[d] = delta[d] < 0 ? m[d] : w;
        source.extent[d] = region.extent[d];
      }
      by_pair[{src, dst}].push_back({source, region.start});
    }
  }
  for (auto& [key, boxes] : by_pair) {
    const auto [src, dst] = key;
    typename plan_t::pair_move pair{src, dst, plan.send_count[src], plan.recv_count[dst], 0};
    for (const auto& [source, destination] : boxes) {
      plan.moves.push_back({src, dst, source, destination, plan.send_count[src], plan.recv_count[dst]});
      const std::size_t count = source.count();
      plan.send_count[src] += count;
      plan.recv_count[dst] += count;
      pair.count += count;
    }
    plan.pairs.push_back(pair);
  }
  return plan;
}

/// The part of a tile whose stencil reads stay inside the tile's interior (radius w[d]), in
/// interior coordinates: [w, n - w) per dimension, empty when n < 2 w somewhere.
template <std::size_t Rank>
md_box<Rank> stencil_inner_region(const md_index<Rank>& interior, const md_index<Rank>& widths) noexcept {
  md_box<Rank> box;
  for (std::size_t d = 0; d < Rank; ++d) {
    box.start[d] = widths[d];
    box.extent[d] = interior[d] >= 2 * widths[d] ? interior[d] - 2 * widths[d] : 0;
  }
  if (box.empty()) box.extent = {};
  return box;
}

/// The rest of the tile, which reads halos: at most 2 Rank disjoint boxes (interior
/// coordinates), dimension by dimension: in dimension d the low and high strips, spanning the
/// inner range in dimensions before d and the whole tile after it. With the inner region they
/// cover the interior exactly once.
template <std::size_t Rank>
std::vector<md_box<Rank>> stencil_outer_regions(const md_index<Rank>& interior, const md_index<Rank>& widths) {
  std::vector<md_box<Rank>> boxes;
  if (detail::product(interior) == 0) return boxes;
  if (stencil_inner_region(interior, widths).empty()) {
    md_box<Rank> all;
    all.extent = interior;
    boxes.push_back(all);
    return boxes;
  }
  for (std::size_t d = 0; d < Rank; ++d) {
    if (widths[d] == 0) continue;
    md_box<Rank> low, high;
    for (std::size_t e = 0; e < Rank; ++e) {
      if (e < d) {
        low.start[e] = high.start[e] = widths[e];
        low.extent[e] = high.extent[e] = interior[e] - 2 * widths[e];
      } else if (e > d) {
        low.start[e] = high.start[e] = 0;
        low.extent[e] = high.extent[e] = interior[e];
      }
    }
    low.start[d] = 0;
    low.extent[d] = widths[d];
    high.start[d] = interior[d] - widths[d];
    high.extent[d] = widths[d];
    if (!low.empty()) boxes.push_back(low);
    if (!high.empty()) boxes.push_back(high);
  }
  return boxes;
}

/// The overlap of two boxes (empty extents when they do not meet).
template <std::size_t Rank>
md_box<Rank> intersect(const md_box<Rank>& a, const md_box<Rank>& b) noexcept {
  md_box<Rank> r;
  for (std::size_t d = 0; d < Rank; ++d) {
    const std::size_t lo = std::max(a.start[d], b.start[d]);
    const std::size_t hi = std::min(a.start[d] + a.extent[d], b.start[d] + b.extent[d]);
    if (hi <= lo) return md_box<Rank>{};
    r.start[d] = lo;
    r.extent[d] = hi - lo;
  }
  return r;
}

/// A copy between two decompositions of the same extents: the box `global` (global
/// coordinates) of src's tile goes to dst's tile, one entry per overlapping pair of tiles.
template <std::size_t Rank>
struct md_redistribution_move {
  std::size_t src_slot;
  std::size_t dst_slot;
  md_box<Rank> global;
  friend bool operator==(const md_redistribution_move&, const md_redistribution_move&) = default;
};

/// Every overlap of a source tile with a destination tile, by source then destination slot.
/// std::invalid_argument when the extents differ.
template <std::size_t Rank>
std::vector<md_redistribution_move<Rank>> plan_redistribution(const md_decomposition<Rank>& from,
                                                              const md_decomposition<Rank>& to) {
  MULTIGPU_EXPECTS(from.extents() == to.extents(),
                   detail::concat("distributed_mdarray: copy between arrays of extents (",
                                  detail::format_index(from.extents(), " x "), ") and (",
                                  detail::format_index(to.extents(), " x "), ")"));
  std::vector<md_redistribution_move<Rank>> moves;
  for (std::size_t s = 0; s < from.slot_count(); ++s) {
    const md_box<Rank> a{from.tile_offset(s), from.tile_extents(s)};
    if (a.empty()) continue;
    for (std::size_t t = 0; t < to.slot_count(); ++t) {
      const md_box<Rank> overlap = intersect(a, md_box<Rank>{to.tile_offset(t), to.tile_extents(t)});
      if (!overlap.empty()) moves.push_back({s, t, overlap});
    }
  }
  return moves;
}

}  // namespace multigpu
