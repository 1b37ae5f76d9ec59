// The host planning of distributed N-D arrays: decompositions, the default grid, halo plans
// (applied on the host to tiles of global indices and checked against the halo rule, cell by
// cell), stencil regions and redistribution plans.
#include <multigpu/mdarray/decomposition.hpp>

#include "../md_index_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg = multigpu;

namespace {

template <std::size_t R>
using idx = mg::md_index<R>;

TEST(MdDecomposition, DefaultGridHasTheLeastSurface) {
  using D2 = mg::md_decomposition<2>;
  using D3 = mg::md_decomposition<3>;
  EXPECT_EQ(D2::choose_grid({1000, 1000}, 1), (idx<2>{1, 1}));
  EXPECT_EQ(D2::choose_grid({1000, 1000}, 2), (idx<2>{2, 1}));  // slabs, split along the slow dimension
  EXPECT_EQ(D2::choose_grid({1000, 1000}, 4), (idx<2>{2, 2}));
  EXPECT_EQ(D2::choose_grid({100000, 10}, 4), (idx<2>{4, 1}));
  EXPECT_EQ(D2::choose_grid({10, 100000}, 4), (idx<2>{1, 4}));
  EXPECT_EQ(D2::choose_grid({1000, 1000}, 8), (idx<2>{4, 2}));
  EXPECT_EQ(D3::choose_grid({512, 512, 512}, 8), (idx<3>{2, 2, 2}));
  EXPECT_EQ(D3::choose_grid({512, 512, 512}, 4), (idx<3>{2, 2, 1}));
  EXPECT_EQ(D3::choose_grid({512, 512, 512}, 2), (idx<3>{2, 1, 1}));
  // Grids that leave tiles empty lose to any that does not.
  EXPECT_EQ(D2::choose_grid({1, 100}, 4), (idx<2>{1, 4}));
  EXPECT_EQ(D2::choose_grid({2, 2}, 4), (idx<2>{2, 2}));
  // When every grid leaves some empty, the fewest empty tiles.
  EXPECT_EQ(D2::choose_grid({1, 3}, 4), (idx<2>{1, 4}));
  // A wider halo in one dimension makes cuts across it dearer.
  EXPECT_EQ(D2::choose_grid({1000, 1000}, 2, {4, 1}), (idx<2>{1, 2}));
}

TEST(MdDecomposition, TilesSplitLikeVectorsAndLocateRoundTrips) {
  const mg::md_decomposition<2> layout({7, 5}, {2, 3});
  EXPECT_EQ(layout.slot_count(), 6u);
  EXPECT_EQ(layout.position(4), (idx<2>{1, 1}));
  EXPECT_EQ(layout.slot_at({1, 2}), 5u);
  EXPECT_EQ(layout.tile_extents(0), (idx<2>{4, 2}));
  EXPECT_EQ(layout.tile_extents(5), (idx<2>{3, 1}));
  EXPECT_EQ(layout.tile_offset(5), (idx<2>{4, 4}));
  // Every element is in exactly the tile locate names, at the local index it names.
  for (std::size_t i = 0; i < 7; ++i)
    for (std::size_t j = 0; j < 5; ++j) {
      const auto [slot, local] = layout.locate({i, j});
      const auto off = layout.tile_offset(slot);
      const auto ext = layout.tile_extents(slot);
      EXPECT_EQ(off[0] + local[0], i);
      EXPECT_EQ(off[1] + local[1], j);
      EXPECT_LT(local[0], ext[0]);
      EXPECT_LT(local[1], ext[1]);
    }
  EXPECT_THROW((void)layout.locate({7, 0}), std::out_of_range);
  EXPECT_THROW((mg::md_decomposition<2>({4, 4}, {0, 2})), std::invalid_argument);
}

TEST(MdDecomposition, ExtentsSmallerThanTheGridLeaveEmptyTiles) {
  const mg::md_decomposition<3> layout({1, 2, 3}, {2, 2, 2});
  std::size_t full = 0;
  for (std::size_t s = 0; s < 8; ++s) full += layout.tile_empty(s) ? 0 : 1;
  EXPECT_EQ(full, 4u);  // parts of 1|0, 1|1 and 2|1 elements: 1 * 2 * 2 tiles hold some
  for (std::size_t i = 0; i < 1; ++i)
    for (std::size_t j = 0; j < 2; ++j)
      for (std::size_t k = 0; k < 3; ++k) EXPECT_FALSE(layout.tile_empty(layout.locate({i, j, k}).first));
}

// ---- halo plans, applied on the host ---------------------------------------------------------

using md_model::expected_cell;
using md_model::for_each_index;
/// The position of `at` in a tile's padded storage of extents `padded`.
template <std::size_t R>
std::size_t padded_linear(const idx<R>& padded, const idx<R>& at) {
  return md_model::linear(padded, at);
}

/// Builds the tiles (interior = global linear index + 1, halos = 0), runs the plan through the
/// send and receive buffers as the device code does, and checks every halo cell.
template <std::size_t R>
void check_plan(const idx<R>& n, const idx<R>& grid, const idx<R>& w, const std::array<mg::boundary_kind, R>& b) {
  SCOPED_TRACE(testing::Message() << "extents " << mg::detail::format_index(n, "x") << " grid "
                                  << mg::detail::format_index(grid, "x") << " widths " << mg::detail::format_index(w));
  const mg::md_decomposition<R> layout(n, grid);
  // Independently: does every exchanging dimension's every non-empty part hold its halo?
  bool fits = true;
  for (std::size_t d = 0; d < R; ++d) {
    const auto offsets = mg::detail::block_offsets(n[d], grid[d]);
    std::size_t parts = 0, narrowest = n[d];
    for (std::size_t c = 0; c < grid[d]; ++c) {
      const std::size_t e = offsets[c + 1] - offsets[c];
      if (e == 0) continue;
      ++parts;
      narrowest = std::min(narrowest, e);
    }
    const bool exchanges = parts > 1 || (parts == 1 && b[d] == mg::boundary_kind::periodic);
    const bool any_tile = mg::detail::product(n) > 0;
    if (any_tile && exchanges && w[d] > narrowest) fits = false;
  }
  if (!fits) {
    EXPECT_THROW((void)mg::plan_halo_exchange(layout, w, b), std::length_error);
    return;
  }
  const auto plan = mg::plan_halo_exchange(layout, w, b);
  const std::size_t slots = layout.slot_count();
  std::vector<std::vector<std::int64_t>> tiles(slots);
  for (std::size_t s = 0; s < slots; ++s) {
    const idx<R> ext = layout.tile_extents(s);
    const idx<R> pad = mg::padded_extents(ext, w);
    tiles[s].assign(mg::detail::product(pad), 0);
    const idx<R> off = layout.tile_offset(s);
    for_each_index<R>(ext, [&](const idx<R>& i) {
      idx<R> at{};
      std::int64_t linear = 0;
      for (std::size_t d = 0; d < R; ++d) {
        at[d] = i[d] + w[d];
        linear = linear * static_cast<std::int64_t>(n[d]) + static_cast<std::int64_t>(off[d] + i[d]);
      }
      tiles[s][padded_linear(pad, at)] = linear + 1;
    });
  }
  // Pack, move per pair, unpack: as the device exchange does.
  std::vector<std::vector<std::int64_t>> send(slots), recv(slots);
  for (std::size_t s = 0; s < slots; ++s) {
    send[s].assign(plan.send_count[s], 0);
    recv[s].assign(plan.recv_count[s], 0);
  }
  for (const auto& m : plan.moves) {
    const idx<R> pad = mg::padded_extents(layout.tile_extents(m.src_slot), w);
    std::size_t k = m.send_offset;
    for_each_index<R>(m.source.extent, [&](const idx<R>& i) {
      idx<R> at{};
      for (std::size_t d = 0; d < R; ++d) at[d] = m.source.start[d] + i[d];
      send[m.src_slot].at(k++) = tiles[m.src_slot].at(padded_linear(pad, at));
    });
  }
  for (const auto& p : plan.pairs) {
    ASSERT_LE(p.send_offset + p.count, send[p.src_slot].size());
    ASSERT_LE(p.recv_offset + p.count, recv[p.dst_slot].size());
    for (std::size_t k = 0; k < p.count; ++k) recv[p.dst_slot][p.recv_offset + k] = send[p.src_slot][p.send_offset + k];
  }
  for (const auto& m : plan.moves) {
    const idx<R> pad = mg::padded_extents(layout.tile_extents(m.dst_slot), w);
    std::size_t k = m.recv_offset;
    for_each_index<R>(m.source.extent, [&](const idx<R>& i) {
      idx<R> at{};
      for (std::size_t d = 0; d < R; ++d) at[d] = m.destination[d] + i[d];
      tiles[m.dst_slot].at(padded_linear(pad, at)) = recv[m.dst_slot].at(k++);
    });
  }
  for (const auto& f : plan.fills) {
    const idx<R> pad = mg::padded_extents(layout.tile_extents(f.slot), w);
    for_each_index<R>(f.region.extent, [&](const idx<R>& i) {
      idx<R> at{};
      for (std::size_t d = 0; d < R; ++d) at[d] = f.region.start[d] + i[d];
      tiles[f.slot].at(padded_linear(pad, at)) = -static_cast<std::int64_t>(f.dimension) - 1;
    });
  }
  // Every cell of every padded tile.
  for (std::size_t s = 0; s < slots; ++s) {
    const idx<R> ext = layout.tile_extents(s);
    if (mg::detail::product(ext) == 0) {
      EXPECT_TRUE(tiles[s].empty());
      continue;
    }
    const idx<R> pad = mg::padded_extents(ext, w);
    const idx<R> off = layout.tile_offset(s);
    for_each_index<R>(pad, [&](const idx<R>& at) {
      std::array<std::int64_t, R> g{};
      for (std::size_t d = 0; d < R; ++d)
        g[d] = static_cast<std::int64_t>(off[d]) + static_cast<std::int64_t>(at[d]) - static_cast<std::int64_t>(w[d]);
      const auto want = expected_cell<R>(n, g, b);
      const std::int64_t got = tiles[s][padded_linear(pad, at)];
      if (want)
        ASSERT_EQ(got, *want) << "slot " << s << " padded cell (" << mg::detail::format_index(at) << ")";
      else
        ASSERT_EQ(got, 0) << "slot " << s << " padded cell (" << mg::detail::format_index(at) << ") was written";
    });
  }
}

using bk = mg::boundary_kind;

TEST(MdHaloPlan, TwoDimensionsEveryBoundaryAndGrid) {
  const std::vector<std::array<bk, 2>> boundaries{{bk::none, bk::none},         {bk::periodic, bk::periodic},
                                                  {bk::fixed, bk::fixed},       {bk::periodic, bk::fixed},
                                                  {bk::fixed, bk::periodic},    {bk::none, bk::periodic},
                                                  {bk::fixed, bk::none}};
  for (const auto& b : boundaries)
    for (const idx<2>& grid : {idx<2>{1, 1}, idx<2>{2, 1}, idx<2>{1, 2}, idx<2>{2, 2}, idx<2>{4, 2}, idx<2>{1, 8}, idx<2>{3, 3}})
      for (std::size_t w : {1u, 2u, 3u})
        for (const idx<2>& n : {idx<2>{13, 11}, idx<2>{17, 29}, idx<2>{24, 9}}) check_plan<2>(n, grid, {w, w}, b);
  // Unequal widths, and a dimension without a halo.
  check_plan<2>({13, 11}, {2, 2}, {1, 3}, {bk::periodic, bk::periodic});
  check_plan<2>({13, 11}, {2, 2}, {0, 2}, {bk::periodic, bk::fixed});
  check_plan<2>({13, 11}, {2, 2}, {2, 0}, {bk::fixed, bk::periodic});
}

TEST(MdHaloPlan, ThreeDimensions) {
  const std::vector<std::array<bk, 3>> boundaries{{bk::periodic, bk::periodic, bk::periodic},
                                                  {bk::fixed, bk::fixed, bk::fixed},
                                                  {bk::none, bk::periodic, bk::fixed},
                                                  {bk::fixed, bk::none, bk::periodic}};
  for (const auto& b : boundaries)
    for (const idx<3>& grid : {idx<3>{1, 1, 1}, idx<3>{2, 1, 1}, idx<3>{2, 2, 1}, idx<3>{2, 2, 2}, idx<3>{1, 2, 4}})
      for (std::size_t w : {1u, 2u})
        for (const idx<3>& n : {idx<3>{7, 5, 11}, idx<3>{5, 13, 6}}) check_plan<3>(n, grid, {w, w, w}, b);
  check_plan<3>({7, 9, 11}, {2, 2, 2}, {1, 2, 3}, {bk::periodic, bk::fixed, bk::periodic});
}

TEST(MdHaloPlan, EmptyTilesAreSkipped) {
  // Extents smaller than the grid: neighbours are the nearest non-empty tiles.
  check_plan<2>({1, 1}, {2, 2}, {1, 1}, {bk::periodic, bk::periodic});
  check_plan<2>({1, 1}, {2, 2}, {1, 1}, {bk::fixed, bk::fixed});
  check_plan<2>({3, 1}, {4, 2}, {1, 1}, {bk::periodic, bk::fixed});
  check_plan<2>({2, 5}, {8, 1}, {1, 2}, {bk::periodic, bk::periodic});
  check_plan<3>({1, 2, 3}, {2, 2, 2}, {1, 1, 1}, {bk::periodic, bk::periodic, bk::periodic});
  check_plan<3>({1, 1, 1}, {2, 2, 2}, {1, 1, 1}, {bk::fixed, bk::periodic, bk::none});
}

TEST(MdHaloPlan, OneContiguousCopyPerPairOfSlots) {
  const mg::md_decomposition<2> layout({100, 100}, {2, 2});
  const auto plan = mg::plan_halo_exchange<2>(layout, {1, 1}, {bk::periodic, bk::periodic});
  // 2 x 2 periodic: every slot hears from all three others (faces twice, corners four times).
  EXPECT_EQ(plan.pairs.size(), 12u);
  for (const auto& p : plan.pairs) EXPECT_NE(p.src_slot, p.dst_slot);
  std::size_t total = 0;
  for (const auto& p : plan.pairs) total += p.count;
  // Each 50 x 50 tile's halo ring: 4 * 50 + 4 corners.
  EXPECT_EQ(total, 4u * (4 * 50 + 4));
  const auto single = mg::plan_halo_exchange<2>(mg::md_decomposition<2>({5, 5}, {1, 1}), {2, 2},
                                                {bk::periodic, bk::none});
  ASSERT_EQ(single.pairs.size(), 1u);
  EXPECT_EQ(single.pairs[0].src_slot, 0u);
  EXPECT_EQ(single.pairs[0].dst_slot, 0u);
  EXPECT_EQ(single.pairs[0].count, 2u * 2 * 5);
}

TEST(MdHaloPlan, AHaloWiderThanATileNamesTheTile) {
  const mg::md_decomposition<2> layout({8, 5}, {2, 2});  // tiles 4 x 3 and 4 x 2
  try {
    (void)mg::plan_halo_exchange<2>(layout, {1, 3}, {bk::none, bk::none});
    FAIL() << "expected std::length_error";
  } catch (const std::length_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("tile 1 (grid position (0, 1), extents 4 x 2)"), std::string::npos) << what;
    EXPECT_NE(what.find("dimension 1 (width 3)"), std::string::npos) << what;
  }
  // One tile in a non-periodic dimension exchanges nothing there: any width will do.
  EXPECT_NO_THROW((void)mg::plan_halo_exchange<2>(mg::md_decomposition<2>({8, 2}, {2, 1}), {1, 5},
                                                  {bk::none, bk::fixed}));
  // Periodic with one tile: the tile must hold the halo it wraps onto itself.
  EXPECT_THROW((void)mg::plan_halo_exchange<2>(mg::md_decomposition<2>({8, 2}, {2, 1}), {1, 3},
                                               {bk::none, bk::periodic}),
               std::length_error);
}

// ---- stencil regions and redistribution ------------------------------------------------------

template <std::size_t R>
void check_regions_cover(const idx<R>& n, const idx<R>& w) {
  std::vector<int> hits(mg::detail::product(n), 0);
  std::vector<mg::md_box<R>> boxes = mg::stencil_outer_regions(n, w);
  const auto inner = mg::stencil_inner_region(n, w);
  if (!inner.empty()) boxes.push_back(inner);
  for (const auto& box : boxes)
    for_each_index<R>(box.extent, [&](const idx<R>& i) {
      idx<R> at{};
      for (std::size_t d = 0; d < R; ++d) at[d] = box.start[d] + i[d];
      ++hits.at(padded_linear(n, at));
    });
  for (int h : hits) ASSERT_EQ(h, 1);
  // The inner region reads nothing outside the interior.
  for (std::size_t d = 0; d < R && !inner.empty(); ++d) {
    EXPECT_GE(inner.start[d], w[d]);
    EXPECT_LE(inner.start[d] + inner.extent[d] + w[d], n[d]);
  }
}

TEST(MdStencilRegions, InnerAndOuterCoverTheTileOnce) {
  check_regions_cover<2>({10, 12}, {1, 1});
  check_regions_cover<2>({10, 12}, {3, 2});
  check_regions_cover<2>({5, 12}, {3, 2});  // no inner region
  check_regions_cover<2>({10, 12}, {0, 2});
  check_regions_cover<3>({7, 8, 9}, {1, 2, 3});
  check_regions_cover<3>({7, 8, 9}, {1, 0, 1});
  EXPECT_LE((mg::stencil_outer_regions<3>({7, 8, 9}, {1, 1, 1}).size()), 6u);
  EXPECT_TRUE((mg::stencil_outer_regions<2>({0, 12}, {1, 1}).empty()));
}

TEST(MdRedistribution, SlabsToPencilsCoverEveryElementOnce) {
  const mg::md_decomposition<3> slabs({9, 7, 5}, {4, 1, 1});
  const mg::md_decomposition<3> pencils({9, 7, 5}, {1, 2, 2});
  const auto moves = mg::plan_redistribution(slabs, pencils);
  std::vector<int> hits(9 * 7 * 5, 0);
  for (const auto& m : moves)
    for_each_index<3>(m.global.extent, [&](const idx<3>& i) {
      const idx<3> g{m.global.start[0] + i[0], m.global.start[1] + i[1], m.global.start[2] + i[2]};
      EXPECT_EQ(slabs.locate(g).first, m.src_slot);
      EXPECT_EQ(pencils.locate(g).first, m.dst_slot);
      ++hits[padded_linear<3>({9, 7, 5}, g)];
    });
  for (int h : hits) ASSERT_EQ(h, 1);
  EXPECT_THROW((void)mg::plan_redistribution(slabs, mg::md_decomposition<3>({9, 7, 4}, {1, 1, 1})),
               std::invalid_argument);
}

}  // namespace
