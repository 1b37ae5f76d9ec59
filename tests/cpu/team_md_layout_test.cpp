// The host planning of team_mdarray: ranks' boxes split over their slots form one grid of the
// whole array, and one halo exchange carried out rank by rank from each rank's routes (its
// own share of the plan, with host blocks exchanged as all_to_all_v would) fills every halo
// cell as the halo rule says.
#include <multigpu/team/team_md_layout.hpp>

#include "../md_index_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <vector>

namespace mg = multigpu;

namespace {

template <std::size_t R>
using idx = mg::md_index<R>;
using bk = mg::boundary_kind;
using md_model::for_each_index;

template <std::size_t R>
idx<R> add(const idx<R>& a, const idx<R>& b) {
  idx<R> c{};
  for (std::size_t d = 0; d < R; ++d) c[d] = a[d] + b[d];
  return c;
}

template <std::size_t R>
void check_layout(const idx<R>& n, const idx<R>& rank_grid, const idx<R>& slot_grid) {
  SCOPED_TRACE(testing::Message() << "extents " << mg::detail::format_index(n, "x") << " ranks "
                                  << mg::detail::format_index(rank_grid, "x") << " slots "
                                  << mg::detail::format_index(slot_grid, "x"));
  const mg::md_team_layout<R> layout(n, rank_grid, slot_grid);
  ASSERT_EQ(layout.tiles().slot_count(), layout.rank_count() * layout.slots_per_rank());
  std::set<std::size_t> seen;
  std::size_t elements = 0;
  for (std::size_t r = 0; r < layout.rank_count(); ++r) {
    const mg::md_decomposition<R> local = layout.local(r);
    EXPECT_EQ(local.extents(), layout.ranks().tile_extents(r));
    for (std::size_t s = 0; s < layout.slots_per_rank(); ++s) {
      const std::size_t t = layout.tile_of(r, s);
      EXPECT_TRUE(seen.insert(t).second) << "tile " << t << " held twice";
      EXPECT_EQ(layout.owner(t), std::make_pair(r, s));
      EXPECT_EQ(layout.tiles().tile_extents(t), local.tile_extents(s)) << "rank " << r << " slot " << s;
      if (!local.tile_empty(s))
        EXPECT_EQ(layout.tiles().tile_offset(t), add(layout.ranks().tile_offset(r), local.tile_offset(s)))
            << "rank " << r << " slot " << s;
      elements += mg::detail::product(local.tile_extents(s));
    }
  }
  EXPECT_EQ(elements, mg::detail::product(n));
}

TEST(MdTeamLayout, RanksBoxesSplitOverTheirSlotsTileTheWholeArray) {
  check_layout<2>({13, 11}, {2, 1}, {1, 2});
  check_layout<2>({13, 11}, {2, 2}, {2, 2});
  check_layout<2>({10, 10}, {2, 1}, {2, 1});  // 5 + 5 over 2 slots: 3, 2, 3, 2 (not a block split of 10 by 4)
  check_layout<2>({3, 1}, {4, 1}, {1, 2});    // empty ranks and empty tiles
  check_layout<3>({7, 5, 11}, {2, 1, 2}, {1, 2, 2});
  check_layout<3>({1, 2, 3}, {2, 2, 1}, {2, 1, 2});
  EXPECT_THROW((mg::md_team_layout<2>({4, 4}, {1, 1}, {0, 1})), std::invalid_argument);
}

TEST(MdTeamLayout, GivenOffsetsMustCoverTheExtent) {
  EXPECT_NO_THROW((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{0, 3, 3, 5}})));
  EXPECT_THROW((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{0, 3, 4}})), std::invalid_argument);
  EXPECT_THROW((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{0, 4, 3, 5}})), std::invalid_argument);
  EXPECT_THROW((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{5}})), std::invalid_argument);
  // Same extents and grid, other offsets: another layout.
  EXPECT_FALSE((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{0, 2, 5}})) ==
               (mg::md_decomposition<1>({5}, {2})));
  EXPECT_TRUE((mg::md_decomposition<1>({5}, {std::vector<std::size_t>{0, 3, 5}})) ==
              (mg::md_decomposition<1>({5}, {2})));
}

/// Every rank packs its tiles' boxes, copies its local pairs, fills its host send block by its
/// routes; the blocks go rank to rank as all_to_all_v moves them; every rank then places what
/// it received by its routes, unpacks and fills. Every halo cell of every tile is checked.
template <std::size_t R>
void check_team_exchange(const idx<R>& n, const idx<R>& rank_grid, const idx<R>& slot_grid, const idx<R>& w,
                         const std::array<bk, R>& b) {
  SCOPED_TRACE(testing::Message() << "extents " << mg::detail::format_index(n, "x") << " ranks "
                                  << mg::detail::format_index(rank_grid, "x") << " slots "
                                  << mg::detail::format_index(slot_grid, "x") << " widths "
                                  << mg::detail::format_index(w));
  const mg::md_team_layout<R> layout(n, rank_grid, slot_grid);
  // Does every exchanging dimension's every non-empty part hold its halo? Else the plan refuses.
  bool fits = true;
  for (std::size_t d = 0; d < R; ++d) {
    std::size_t parts = 0, narrowest = n[d];
    for (std::size_t c = 0; c < layout.tiles().grid()[d]; ++c) {
      const std::size_t e = layout.tiles().part_extent(d, c);
      if (e == 0) continue;
      ++parts;
      narrowest = std::min(narrowest, e);
    }
    if (mg::detail::product(n) > 0 && (parts > 1 || (parts == 1 && b[d] == bk::periodic)) && w[d] > narrowest)
      fits = false;
  }
  if (!fits) {
    EXPECT_THROW((void)mg::plan_halo_exchange(layout.tiles(), w, b), std::length_error);
    return;
  }
  const auto plan = mg::plan_halo_exchange(layout.tiles(), w, b);
  const std::size_t ranks = layout.rank_count();
  const std::size_t tiles_count = layout.tiles().slot_count();
  std::vector<mg::md_team_routes> routes;
  for (std::size_t r = 0; r < ranks; ++r) routes.push_back(mg::plan_team_routes(layout, plan, r));
  for (std::size_t a = 0; a < ranks; ++a)
    for (std::size_t c = 0; c < ranks; ++c)
      ASSERT_EQ(routes[a].send_counts[c], routes[c].recv_counts[a]) << "rank " << a << " to rank " << c;

  // Tiles: interior = global linear index + 1, halos 0.
  std::vector<std::vector<std::int64_t>> tiles(tiles_count), send(tiles_count), recv(tiles_count);
  const auto padded = [&](std::size_t t) { return mg::padded_extents(layout.tiles().tile_extents(t), w); };
  for (std::size_t t = 0; t < tiles_count; ++t) {
    const idx<R> ext = layout.tiles().tile_extents(t);
    tiles[t].assign(mg::detail::product(padded(t)), 0);
    const idx<R> off = layout.tiles().tile_offset(t);
    for_each_index<R>(ext, [&](const idx<R>& i) {
      tiles[t][md_model::linear(padded(t), add(i, w))] =
          static_cast<std::int64_t>(md_model::linear(n, add(off, i))) + 1;
    });
    send[t].assign(plan.send_count[t], 0);
    recv[t].assign(plan.recv_count[t], 0);
  }
  for (const auto& m : plan.moves) {
    std::size_t k = m.send_offset;
    for_each_index<R>(m.source.extent, [&](const idx<R>& i) {
      send[m.src_slot].at(k++) = tiles[m.src_slot].at(md_model::linear(padded(m.src_slot), add(m.source.start, i)));
    });
  }
  // Per rank: local pairs, and the host send block.
  std::vector<std::vector<std::int64_t>> send_block(ranks), recv_block(ranks);
  for (std::size_t r = 0; r < ranks; ++r) {
    for (std::size_t k : routes[r].local_pairs) {
      const auto& p = plan.pairs[k];
      ASSERT_EQ(layout.owner(p.src_slot).first, r);
      ASSERT_EQ(layout.owner(p.dst_slot).first, r);
      for (std::size_t e = 0; e < p.count; ++e)
        recv[p.dst_slot].at(p.recv_offset + e) = send[p.src_slot].at(p.send_offset + e);
    }
    send_block[r].assign(routes[r].sent, -7);
    for (const auto& c : routes[r].sends) {
      const auto& p = plan.pairs[c.pair];
      for (std::size_t e = 0; e < p.count; ++e)
        send_block[r].at(c.host_offset + e) = send[p.src_slot].at(p.send_offset + e);
    }
    recv_block[r].assign(routes[r].received, -9);
  }
  // all_to_all_v.
  for (std::size_t a = 0; a < ranks; ++a)
    for (std::size_t c = 0; c < ranks; ++c)
      for (std::size_t e = 0; e < routes[a].send_counts[c]; ++e)
        recv_block[c].at(routes[c].recv_displs[a] + e) = send_block[a].at(routes[a].send_displs[c] + e);
  for (std::size_t r = 0; r < ranks; ++r)
    for (const auto& c : routes[r].receives) {
      const auto& p = plan.pairs[c.pair];
      for (std::size_t e = 0; e < p.count; ++e)
        recv[p.dst_slot].at(p.recv_offset + e) = recv_block[r].at(c.host_offset + e);
    }
  // Self pairs (one part in a periodic dimension) unpack from the send buffer.
  for (const auto& m : plan.moves) {
    const auto& from = m.src_slot == m.dst_slot ? send[m.src_slot] : recv[m.dst_slot];
    std::size_t k = m.src_slot == m.dst_slot ? m.send_offset : m.recv_offset;
    for_each_index<R>(m.source.extent, [&](const idx<R>& i) {
      tiles[m.dst_slot].at(md_model::linear(padded(m.dst_slot), add(m.destination, i))) = from.at(k++);
    });
  }
  for (const auto& f : plan.fills)
    for_each_index<R>(f.region.extent, [&](const idx<R>& i) {
      tiles[f.slot].at(md_model::linear(padded(f.slot), add(f.region.start, i))) =
          -static_cast<std::int64_t>(f.dimension) - 1;
    });
  for (std::size_t t = 0; t < tiles_count; ++t) {
    if (layout.tiles().tile_empty(t)) continue;
    const idx<R> off = layout.tiles().tile_offset(t);
    for_each_index<R>(padded(t), [&](const idx<R>& at) {
      std::array<std::int64_t, R> g{};
      for (std::size_t d = 0; d < R; ++d)
        g[d] = static_cast<std::int64_t>(off[d]) + static_cast<std::int64_t>(at[d]) - static_cast<std::int64_t>(w[d]);
      const auto want = md_model::expected_cell<R>(n, g, b);
      const std::int64_t got = tiles[t][md_model::linear(padded(t), at)];
      ASSERT_EQ(got, want.value_or(0)) << "tile " << t << " (rank " << layout.owner(t).first << ") padded cell ("
                                       << mg::detail::format_index(at) << ")";
    });
  }
}

TEST(MdTeamRoutes, OneExchangeRankByRankFillsEveryHalo) {
  const std::vector<std::array<bk, 2>> boundaries{
      {bk::periodic, bk::periodic}, {bk::fixed, bk::none}, {bk::none, bk::periodic}, {bk::fixed, bk::fixed}};
  for (const auto& b : boundaries)
    for (const idx<2>& ranks : {idx<2>{1, 1}, idx<2>{2, 1}, idx<2>{1, 2}, idx<2>{2, 2}, idx<2>{3, 1}})
      for (const idx<2>& slots : {idx<2>{1, 1}, idx<2>{2, 1}, idx<2>{1, 2}, idx<2>{2, 2}})
        for (std::size_t w : {1u, 2u}) {
          check_team_exchange<2>({17, 13}, ranks, slots, {w, w}, b);
          check_team_exchange<2>({10, 10}, ranks, slots, {w, w}, b);
        }
  // Arrays smaller than the grid: empty ranks and tiles.
  check_team_exchange<2>({3, 1}, {2, 1}, {2, 1}, {1, 1}, {bk::periodic, bk::periodic});
  check_team_exchange<2>({1, 5}, {2, 2}, {1, 2}, {1, 1}, {bk::fixed, bk::periodic});
}

TEST(MdTeamRoutes, ThreeDimensionsWithCornersAcrossRanks) {
  const std::vector<std::array<bk, 3>> boundaries{{bk::periodic, bk::periodic, bk::periodic},
                                                  {bk::fixed, bk::none, bk::periodic}};
  for (const auto& b : boundaries)
    for (const idx<3>& ranks : {idx<3>{2, 1, 1}, idx<3>{2, 2, 1}, idx<3>{1, 2, 2}, idx<3>{2, 2, 2}})
      for (const idx<3>& slots : {idx<3>{1, 1, 1}, idx<3>{1, 1, 2}, idx<3>{2, 1, 1}})
        check_team_exchange<3>({7, 6, 9}, ranks, slots, {1, 1, 1}, b);
  check_team_exchange<3>({9, 8, 7}, {2, 1, 2}, {1, 2, 1}, {2, 1, 3}, {bk::periodic, bk::fixed, bk::periodic});
}

}  // namespace
