#pragma once
// How a team_mdarray lies over ranks and slots (docs/mdarray.md#teams), as pure host
// arithmetic: the extents split over a grid of ranks (each rank a box), each rank's box over
// a grid of its slots, the same slot grid on every rank. Together the tiles form one grid of
// the whole array (md_decomposition with given part offsets), so one halo plan of the whole
// array (plan_halo_exchange) says every box every tile sends, and every rank reads its own
// part of it: which boxes stay on the rank and which cross to which rank, in an order both
// sides agree on without a message.

#include <multigpu/core/error.hpp>
#include <multigpu/mdarray/decomposition.hpp>

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace multigpu {

template <std::size_t Rank>
class md_team_layout {
 public:
  md_team_layout() = default;
  /// `rank_grid` ranks per dimension (its product is the team's size), `slot_grid` slots per
  /// dimension on every rank. std::invalid_argument when a grid dimension is zero.
  md_team_layout(const md_index<Rank>& extents, const md_index<Rank>& rank_grid, const md_index<Rank>& slot_grid)
      : ranks_(extents, rank_grid), slot_grid_(slot_grid) {
    std::array<std::vector<std::size_t>, Rank> offsets;
    for (std::size_t d = 0; d < Rank; ++d) {
      MULTIGPU_EXPECTS(slot_grid[d] > 0,
                       detail::concat("team_mdarray: the slot grid (", detail::format_index(slot_grid, " x "),
                                      ") has no part in dimension ", d));
      for (std::size_t c = 0; c < rank_grid[d]; ++c) {
        const std::vector<std::size_t> inner = detail::block_offsets(ranks_.part_extent(d, c), slot_grid[d]);
        for (std::size_t k = 0; k < slot_grid[d]; ++k) offsets[d].push_back(ranks_.part_offset(d, c) + inner[k]);
      }
      offsets[d].push_back(extents[d]);
    }
    tiles_ = md_decomposition<Rank>(extents, std::move(offsets));
  }

  const md_index<Rank>& extents() const noexcept { return ranks_.extents(); }
  /// The ranks' boxes: rank r's box starts at ranks().tile_offset(r), of ranks().tile_extents(r).
  const md_decomposition<Rank>& ranks() const noexcept { return ranks_; }
  /// Every tile of every rank, as one grid of the whole array.
  const md_decomposition<Rank>& tiles() const noexcept { return tiles_; }
  const md_index<Rank>& slot_grid() const noexcept { return slot_grid_; }
  std::size_t rank_count() const noexcept { return ranks_.slot_count(); }
  std::size_t slots_per_rank() const noexcept { return detail::product(slot_grid_); }

  /// Rank r's box split over its slots: the layout of its local array (tile s of it is tile
  /// tile_of(r, s) of the whole).
  md_decomposition<Rank> local(std::size_t rank) const { return {ranks_.tile_extents(rank), slot_grid_}; }

  /// The tile (of tiles()) that slot `slot` of rank `rank` holds.
  std::size_t tile_of(std::size_t rank, std::size_t slot) const {
    const md_index<Rank> r = ranks_.position(rank);
    md_index<Rank> s{};
    std::size_t rest = slot;
    for (std::size_t d = Rank; d-- > 0;) {
      s[d] = rest % slot_grid_[d];
      rest /= slot_grid_[d];
    }
    md_index<Rank> p{};
    for (std::size_t d = 0; d < Rank; ++d) p[d] = r[d] * slot_grid_[d] + s[d];
    return tiles_.slot_at(p);
  }
  /// The rank and slot holding tile t (of tiles()).
  std::pair<std::size_t, std::size_t> owner(std::size_t tile) const {
    const md_index<Rank> p = tiles_.position(tile);
    md_index<Rank> r{}, s{};
    for (std::size_t d = 0; d < Rank; ++d) {
      r[d] = p[d] / slot_grid_[d];
      s[d] = p[d] % slot_grid_[d];
    }
    std::size_t slot = 0;
    for (std::size_t d = 0; d < Rank; ++d) slot = slot * slot_grid_[d] + s[d];
    return {ranks_.slot_at(r), slot};
  }

  friend bool operator==(const md_team_layout& a, const md_team_layout& b) {
    return a.ranks_ == b.ranks_ && a.slot_grid_ == b.slot_grid_;
  }

 private:
  md_decomposition<Rank> ranks_;
  md_index<Rank> slot_grid_{};
  md_decomposition<Rank> tiles_;
};

/// One rank's share of a halo plan of the whole array: the pairs of tiles (plan.pairs) whose
/// boxes stay on the rank, and those it sends or receives, each with its place in the
/// rank's host send or receive block. Sends are ordered by receiving rank, receives by
/// sending rank, each then in plan order: the order both ranks of a pair walk.
struct md_team_routes {
  struct crossing {
    std::size_t pair;         ///< index into plan.pairs
    std::size_t host_offset;  ///< elements into the rank's send (or receive) block
  };
  std::vector<std::size_t> local_pairs;  ///< indices into plan.pairs: both tiles on this rank
  std::vector<crossing> sends;
  std::vector<crossing> receives;
  /// Elements to and from each rank, and where each rank's run starts (all_to_all_v, in elements).
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
  std::size_t sent = 0;      ///< elements of the send block
  std::size_t received = 0;  ///< elements of the receive block
};

template <std::size_t Rank>
md_team_routes plan_team_routes(const md_team_layout<Rank>& layout, const halo_exchange_plan<Rank>& plan,
                                std::size_t me) {
  const std::size_t ranks = layout.rank_count();
  md_team_routes routes;
  routes.send_counts.assign(ranks, 0);
  routes.send_displs.assign(ranks, 0);
  routes.recv_counts.assign(ranks, 0);
  routes.recv_displs.assign(ranks, 0);
  std::vector<std::size_t> src_rank(plan.pairs.size()), dst_rank(plan.pairs.size());
  for (std::size_t k = 0; k < plan.pairs.size(); ++k) {
    src_rank[k] = layout.owner(plan.pairs[k].src_slot).first;
    dst_rank[k] = layout.owner(plan.pairs[k].dst_slot).first;
    if (src_rank[k] == me && dst_rank[k] == me) routes.local_pairs.push_back(k);
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    if (r == me) continue;
    routes.send_displs[r] = routes.sent;
    routes.recv_displs[r] = routes.received;
    for (std::size_t k = 0; k < plan.pairs.size(); ++k) {
      if (src_rank[k] == me && dst_rank[k] == r) {
        routes.sends.push_back({k, routes.sent});
        routes.sent += plan.pairs[k].count;
        routes.send_counts[r] += plan.pairs[k].count;
      }
      if (src_rank[k] == r && dst_rank[k] == me) {
        routes.receives.push_back({k, routes.received});
        routes.received += plan.pairs[k].count;
        routes.recv_counts[r] += plan.pairs[k].count;
      }
    }
  }
  routes.send_displs[me] = routes.sent;
  routes.recv_displs[me] = routes.received;
  return routes;
}

}  // namespace multigpu
