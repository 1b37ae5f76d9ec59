// N-D arrays over a team under mpirun (every rank on its bootstrap GPU, GPU 0 on a one-GPU
// machine), against a host model of the whole array that every rank builds for itself: every
// halo cell after an exchange (faces, edges and corners, periodic, fixed and none), 9- and
// 27-point stencils in both schedules, reductions, copies between layouts (slabs to pencils
// across ranks), and bad input that must fail on every rank.
// Local groups of one slot and of two slots of one GPU (hybrid ranks x slots).

#include "support.hpp"
#include "team_support.hpp"

#include "../md_index_model.hpp"

#include <multigpu/team/team_mdarray.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

template <std::size_t R>
using idx = mg::md_index<R>;
using bk = mg::boundary_kind;
using cell = long long;

/// The whole array: element at global index i holds its row-major position + 1.
template <std::size_t R>
std::vector<cell> numbered(const idx<R>& n) {
  std::vector<cell> v(mg::detail::product(n));
  for (std::size_t k = 0; k < v.size(); ++k) v[k] = static_cast<cell>(k) + 1;
  return v;
}

template <std::size_t R>
mg::team_mdarray_options<cell, R> options_for(std::size_t w, const std::array<bk, R>& b) {
  mg::team_mdarray_options<cell, R> o;
  o.halo.fill(w);
  for (std::size_t d = 0; d < R; ++d) o.boundaries[d] = {b[d], -static_cast<cell>(d) - 1};  // the model's fill marker
  return o;
}

template <std::size_t R>
std::string describe(const idx<R>& n, std::size_t w, const mg::device_group& g) {
  return "extents " + mg::detail::format_index(n, "x") + ", halo " + std::to_string(w) + ", " +
         std::to_string(g.size()) + " local slot(s), " + std::to_string(world_size()) + " rank(s)";
}

/// Whether every exchanging dimension's non-empty parts hold the halo (else construction must
/// throw), from the tiles' part extents (md_team_layout, tested on the host).
template <std::size_t R>
bool halo_fits(const mg::md_team_layout<R>& layout, std::size_t w, const std::array<bk, R>& b) {
  if (mg::detail::product(layout.extents()) == 0) return true;
  for (std::size_t d = 0; d < R; ++d) {
    std::size_t parts = 0, narrowest = layout.extents()[d];
    for (std::size_t c = 0; c < layout.tiles().grid()[d]; ++c) {
      const std::size_t e = layout.tiles().part_extent(d, c);
      if (e == 0) continue;
      ++parts;
      narrowest = std::min(narrowest, e);
    }
    if ((parts > 1 || (parts == 1 && b[d] == bk::periodic)) && w > narrowest) return false;
  }
  return true;
}

constexpr cell untouched = -999;  // what halos hold before an exchange; "none" leaves it there

/// f(tile, at, value, padded extents) for every cell `at` of every padded tile of this rank, as
/// the tile holds it once its stream is done.
template <std::size_t R, class F>
void for_each_padded_cell(mg::team_mdarray<cell, R>& a, F&& f) {
  mg::for_each_tile(a, [&](const mg::md_tile<cell, R>& t) {
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(t.stream));
    std::vector<cell> padded(t.with_halo.size());
    MULTIGPU_CUDA_TRY(
        cudaMemcpy(padded.data(), t.with_halo.data_handle(), padded.size() * sizeof(cell), cudaMemcpyDeviceToHost));
    idx<R> pe{};
    for (std::size_t d = 0; d < R; ++d) pe[d] = t.with_halo.extent(d);
    md_model::for_each_index<R>(pe, [&](const idx<R>& at) { f(t, at, padded[md_model::linear(pe, at)], pe); });
  });
}

/// Every cell of every padded tile of this rank against the halo rule (md_index_model.hpp),
/// the interiors having had `shift` added to their numbers.
template <std::size_t R>
void expect_halos(mg::team_mdarray<cell, R>& a, const std::array<bk, R>& b, cell shift) {
  const idx<R> n = a.extents();
  const idx<R> w = a.halo_widths();
  for_each_padded_cell(a, [&](const mg::md_tile<cell, R>& t, const idx<R>& at, cell got, const idx<R>&) {
    std::array<std::int64_t, R> g{};
    for (std::size_t d = 0; d < R; ++d)
      g[d] =
          static_cast<std::int64_t>(t.offset[d]) + static_cast<std::int64_t>(at[d]) - static_cast<std::int64_t>(w[d]);
    const auto rule = md_model::expected_cell<R>(n, g, b);  // position + 1, a fill marker (< 0), or none
    const cell want = !rule ? untouched : *rule > 0 ? *rule + shift : *rule;
    ASSERT_EQ(got, want) << "rank " << world_rank() << " slot " << t.slot << " padded cell ("
                         << mg::detail::format_index(at) << ")";
  });
}

struct add {
  cell k;
  __device__ cell operator()(cell x) const { return x + k; }
};

/// Exchanges checked (the rest threw std::length_error as they must): some must be.
int exchanges_checked = 0;

template <std::size_t R>
void check_exchange(const idx<R>& n, std::size_t w, const std::array<bk, R>& b) {
  const mg::team t = world();
  for (const mg::device_group& g : groups()) {
    SCOPED_TRACE(describe(n, w, g));
    const auto o = options_for<R>(w, b);
    const idx<R> rank_grid = mg::md_decomposition<R>::choose_grid(n, static_cast<std::size_t>(world_size()), o.halo);
    const idx<R> slot_grid =
        mg::md_decomposition<R>::choose_grid(mg::md_decomposition<R>(n, rank_grid).tile_extents(0), g.size(), o.halo);
    const std::vector<cell> host = numbered(n);
    if (!halo_fits(mg::md_team_layout<R>(n, rank_grid, slot_grid), w, b)) {
      EXPECT_THROW((mg::team_mdarray<cell, R>(t, n, std::span<const cell>(host), g, o)), std::length_error);
      continue;
    }
    // Halos start at `untouched`: the numbers reach the interiors by a copy, which leaves halos be.
    const mg::team_mdarray<cell, R> numbers(t, n, std::span<const cell>(host), g, o);
    mg::team_mdarray<cell, R> a(t, n, untouched, g, o);
    mg::copy(numbers, a);
    EXPECT_EQ(a.to_host(), host);
    mg::exchange_halos(a);
    expect_halos(a, b, 0);
    // New interiors, the same buffers: the second exchange must carry the new values.
    mg::transform(a, a, add{1000});
    mg::exchange_halos(a);
    expect_halos(a, b, 1000);
    ++exchanges_checked;
  }
}

TEST(TeamMdarray, EveryHaloCellAfterAnExchange1D) {
  exchanges_checked = 0;
  for (const bk b : {bk::periodic, bk::fixed, bk::none})
    for (std::size_t w : {1u, 2u})
      for (std::size_t n : {1u, 5u, 29u}) check_exchange<1>({n}, w, {b});
  EXPECT_GT(exchanges_checked, 0);
}

TEST(TeamMdarray, EveryHaloCellAfterAnExchange2D) {
  exchanges_checked = 0;
  const std::vector<std::array<bk, 2>> boundaries{
      {bk::periodic, bk::periodic}, {bk::fixed, bk::none}, {bk::none, bk::periodic}, {bk::fixed, bk::fixed}};
  for (const auto& b : boundaries)
    for (std::size_t w : {1u, 2u, 3u})
      for (const idx<2>& n : {idx<2>{13, 11}, idx<2>{31, 7}, idx<2>{1, 1}, idx<2>{2, 3}}) check_exchange<2>(n, w, b);
  EXPECT_GT(exchanges_checked, 0);
}

TEST(TeamMdarray, EveryHaloCellAfterAnExchange3D) {
  exchanges_checked = 0;
  const std::vector<std::array<bk, 3>> boundaries{{bk::periodic, bk::periodic, bk::periodic},
                                                  {bk::fixed, bk::none, bk::periodic}};
  for (const auto& b : boundaries)
    for (std::size_t w : {1u, 2u})
      for (const idx<3>& n : {idx<3>{7, 6, 9}, idx<3>{1, 2, 3}}) check_exchange<3>(n, w, b);
  EXPECT_GT(exchanges_checked, 0);
}

/// Every point within radius 1 (9 points in 2-D, 27 in 3-D), weighted by its position in the
/// stencil, plus the centre's global index: corners and index() both matter.
template <std::size_t R>
struct full_stencil {
  __device__ cell operator()(const mg::stencil_accessor<cell, R>& acc) const {
    cell sum = 0;
    cell weight = 1;
    if constexpr (R == 2) {
      for (int i = -1; i <= 1; ++i)
        for (int j = -1; j <= 1; ++j) sum += weight++ * acc(i, j);
    } else {
      for (int i = -1; i <= 1; ++i)
        for (int j = -1; j <= 1; ++j)
          for (int k = -1; k <= 1; ++k) sum += weight++ * acc(i, j, k);
    }
    cell at = 0;
    for (std::size_t d = 0; d < R; ++d) at = at * 1000 + static_cast<cell>(acc.index()[d]);
    return sum + 1000003 * at;
  }
};

template <std::size_t R>
std::vector<cell> host_full_stencil(const idx<R>& n, const std::vector<cell>& in, const std::array<bk, R>& b) {
  std::vector<cell> out(in.size());
  md_model::for_each_index<R>(n, [&](const idx<R>& i) {
    cell sum = 0;
    cell weight = 1;
    idx<R> three{};
    three.fill(3);
    md_model::for_each_index<R>(three, [&](const idx<R>& k) {
      std::array<std::int64_t, R> g{};
      for (std::size_t d = 0; d < R; ++d) g[d] = static_cast<std::int64_t>(i[d]) + static_cast<std::int64_t>(k[d]) - 1;
      const auto v = md_model::expected_cell<R>(n, g, b);  // position + 1, the fill marker, or untouched (0)
      sum += weight++ * (v ? *v : 0);
    });
    cell at = 0;
    for (std::size_t d = 0; d < R; ++d) at = at * 1000 + static_cast<cell>(i[d]);
    out[md_model::linear(n, i)] = sum + 1000003 * at;
  });
  return out;
}

template <std::size_t R>
void check_stencil(const idx<R>& n, const std::array<bk, R>& b) {
  const mg::team t = world();
  for (const mg::device_group& g : groups())
    for (const auto schedule : {mg::stencil_schedule::overlapped, mg::stencil_schedule::exchange_first}) {
      SCOPED_TRACE(describe(n, 1, g) +
                   (schedule == mg::stencil_schedule::overlapped ? ", overlapped" : ", exchange first"));
      const std::vector<cell> host = numbered(n);
      mg::team_mdarray<cell, R> in(t, n, std::span<const cell>(host), g, options_for<R>(1, b));
      mg::team_mdarray<cell, R> out(t, n, cell{0}, g, in.options());
      mg::stencil_transform(in, out, full_stencil<R>{}, schedule);
      EXPECT_EQ(out.to_host(), host_full_stencil<R>(n, host, b));
    }
}

TEST(TeamMdarray, NineAndTwentySevenPointStencilsReadCornersAcrossRanks) {
  check_stencil<2>({17, 13}, {bk::periodic, bk::periodic});
  check_stencil<2>({17, 13}, {bk::fixed, bk::none});
  check_stencil<2>({5, 29}, {bk::none, bk::periodic});
  check_stencil<3>({7, 6, 9}, {bk::periodic, bk::periodic, bk::periodic});
  check_stencil<3>({9, 5, 4}, {bk::fixed, bk::periodic, bk::none});
}

struct average4 {
  __device__ double operator()(const mg::stencil_accessor<double, 2>& u) const {
    return 0.25 * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1));
  }
};
struct square_of {
  __host__ __device__ double operator()(double x) const { return x * x; }
};
struct difference {
  __device__ double operator()(double a, double b) const { return a - b; }
};
struct plus_d {
  __host__ __device__ double operator()(double a, double b) const { return a + b; }
};

TEST(TeamMdarray, JacobiStepsSwapReduceAndCompareLikeTheHostLoop) {
  const mg::team t = world();
  const idx<2> n{37, 23};
  for (const mg::device_group& g : groups()) {
    SCOPED_TRACE(describe(n, 1, g));
    mg::team_mdarray_options<double, 2> o;
    o.halo = {1, 1};
    o.boundaries = {{{bk::fixed, 1.0}, {bk::periodic}}};
    std::vector<double> host(n[0] * n[1]);
    for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<double>(k % 7) * 0.5;
    mg::team_mdarray<double, 2> u(t, n, std::span<const double>(host), g, o), next(t, n, 0.0, g, u.options());
    for (int it = 0; it < 20; ++it) {
      mg::stencil_transform(u, next, average4{});
      std::swap(u, next);
      std::vector<double> h(host.size());
      for (std::size_t i = 0; i < n[0]; ++i)
        for (std::size_t j = 0; j < n[1]; ++j) {
          const auto at = [&](std::int64_t a, std::int64_t c) {
            if (a < 0 || a >= static_cast<std::int64_t>(n[0])) return 1.0;
            const std::size_t cw =
                static_cast<std::size_t>((c + static_cast<std::int64_t>(n[1])) % static_cast<std::int64_t>(n[1]));
            return host[static_cast<std::size_t>(a) * n[1] + cw];
          };
          const auto ii = static_cast<std::int64_t>(i), jj = static_cast<std::int64_t>(j);
          h[i * n[1] + j] = 0.25 * (at(ii - 1, jj) + at(ii + 1, jj) + at(ii, jj - 1) + at(ii, jj + 1));
        }
      host = std::move(h);
    }
    const std::vector<double> got = u.to_host();
    ASSERT_EQ(got.size(), host.size());
    for (std::size_t k = 0; k < host.size(); ++k) ASSERT_NEAR(got[k], host[k], 1e-12) << "element " << k;
    double want = 0;
    for (double x : host) want += x * x;
    EXPECT_NEAR(mg::transform_reduce(u, 0.0, plus_d{}, square_of{}), want, 1e-9 * want);
    // The same into a replicated value on the rank's slots, for kernels to read.
    mg::replicated<double> r(g, -1.0);
    mg::transform_reduce_replicated(u, 0.0, plus_d{}, square_of{}, r);
    for (std::size_t s = 0; s < g.size(); ++s) EXPECT_NEAR(r.get(s), want, 1e-9 * want) << "slot " << s;
    // The change of the last sweep, through the two-array transform.
    mg::team_mdarray<double, 2> change(t, n, 0.0, g, u.options());
    mg::transform(u, next, change, difference{});
    const std::vector<double> before = next.to_host();
    double change2 = 0;
    for (std::size_t k = 0; k < host.size(); ++k) change2 += (host[k] - before[k]) * (host[k] - before[k]);
    EXPECT_NEAR(mg::transform_reduce(change, 0.0, plus_d{}, square_of{}), change2, 1e-9 * change2 + 1e-300);
    mg::team_mdarray<double, 2> other(t, n, std::span<const double>(host), g, u.options());
    EXPECT_TRUE(mg::equal(u, other));
    // Elements at a global index: the corner of the last rank's box, read on every rank.
    const idx<2> corner = other.layout().ranks().tile_offset(static_cast<std::size_t>(t.size() - 1));
    EXPECT_EQ(other.get(corner), host[corner[0] * n[1] + corner[1]]);
    other.set(corner, 42.0);  // every rank calls it; the last rank writes
    EXPECT_EQ(other.get(corner), 42.0);
    EXPECT_FALSE(mg::equal(u, other));
    EXPECT_THROW((void)other.get({n[0], 0}), std::out_of_range);
    mg::fill(other, 2.0);
    EXPECT_DOUBLE_EQ(mg::reduce(other, 0.0, plus_d{}), 2.0 * static_cast<double>(host.size()));
  }
}

/// Every halo cell of this rank's tiles holds `value`.
template <std::size_t R>
void expect_halos_hold(mg::team_mdarray<cell, R>& a, cell value) {
  const idx<R> w = a.halo_widths();
  for_each_padded_cell(a, [&](const mg::md_tile<cell, R>& t, const idx<R>& at, cell got, const idx<R>& pe) {
    bool halo = false;
    for (std::size_t d = 0; d < R; ++d) halo = halo || at[d] < w[d] || at[d] >= pe[d] - w[d];
    if (halo)
      ASSERT_EQ(got, value) << "rank " << world_rank() << " slot " << t.slot << " halo cell ("
                            << mg::detail::format_index(at) << ")";
  });
}

template <std::size_t R>
void check_copy(const idx<R>& n, const idx<R>& from_ranks, const idx<R>& to_ranks, std::size_t to_halo) {
  const mg::team t = world();
  const auto gs = groups();
  const std::vector<cell> host = numbered(n);
  for (const mg::device_group& gf : gs)
    for (const mg::device_group& gt : gs) {
      SCOPED_TRACE(describe(n, 0, gf) + " -> rank grid " + mg::detail::format_index(to_ranks, "x") + ", " +
                   std::to_string(gt.size()) + " slot(s)");
      mg::team_mdarray_options<cell, R> of, ot;
      of.rank_grid = from_ranks;
      ot.rank_grid = to_ranks;
      ot.halo.fill(to_halo);
      mg::team_mdarray<cell, R> from(t, n, std::span<const cell>(host), gf, of);
      mg::team_mdarray<cell, R> to(t, n, cell{-1}, gt, ot);
      mg::copy(from, to);
      EXPECT_EQ(to.to_host(), host);
      expect_halos_hold(to, cell{-1});  // a copy leaves halos be
      // Back again, into an array that held something else.
      mg::fill(from, cell{5});
      mg::copy(to, from);
      EXPECT_EQ(from.to_host(), host);
    }
}

TEST(TeamMdarray, CopyBetweenLayoutsSlabsToPencils) {
  const std::size_t p = static_cast<std::size_t>(world_size());
  check_copy<2>({13, 11}, {p, 1}, {1, p}, 2);
  check_copy<2>({2, 3}, {p, 1}, {1, p}, 1);  // some ranks' boxes empty from 3 ranks on
  check_copy<3>({7, 6, 9}, {p, 1, 1}, {1, 1, p}, 2);
  check_copy<3>({7, 6, 9}, {1, p, 1}, {1, 1, p}, 1);
  // Other extents: std::invalid_argument on every rank, before any message.
  const mg::team t = world();
  mg::team_mdarray<int, 2> a(t, {4, 4}, 0, groups()[0]), b(t, {4, 5}, 0, groups()[0]);
  EXPECT_THROW(mg::copy(a, b), std::invalid_argument);
}

TEST(TeamMdarray, BadInputFailsOnEveryRank) {
  const mg::team t = world();
  const mg::device_group g = groups()[0];
  // A halo wider than the tiles it must come from.
  mg::team_mdarray_options<int, 2> wide;
  wide.halo = {4, 4};
  wide.boundaries = {{{bk::periodic}, {bk::periodic}}};
  wide.rank_grid = {static_cast<std::size_t>(world_size()), 1};
  EXPECT_THROW((mg::team_mdarray<int, 2>(t, {3 * static_cast<std::size_t>(world_size()), 8}, 0, g, wide)),
               std::length_error);
  // A rank grid with another number of places than the team has ranks.
  mg::team_mdarray_options<int, 2> odd;
  odd.rank_grid = {static_cast<std::size_t>(world_size()) + 1, 1};
  EXPECT_THROW((mg::team_mdarray<int, 2>(t, {10, 10}, 0, g, odd)), std::invalid_argument);
  // Another shape on the last rank: every rank hears of it.
  if (world_size() > 1) {
    const std::size_t rows = t.rank() == t.size() - 1 ? 11 : 10;
    try {
      mg::team_mdarray<int, 2> a(t, {rows, 10}, 0, g);
      ADD_FAILURE() << "no mismatch reported";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("another array"), std::string::npos) << e.what();
    }
  }
  // A host array of the wrong size on the last rank only: it throws its own error, every other
  // rank comm_error naming it.
  {
    std::vector<int> host(100, 1);
    if (t.rank() == t.size() - 1) host.resize(99);
    try {
      mg::team_mdarray<int, 2> b(t, {10, 10}, std::span<const int>(host), g);
      ADD_FAILURE() << "no error reported";
    } catch (const mg::comm_error& e) {
      EXPECT_NE(t.rank(), t.size() - 1) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(t.size() - 1)), std::string::npos) << e.what();
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(t.rank(), t.size() - 1) << e.what();
    }
  }
  // The team is still in step.
  mg::team_mdarray<int, 2> a(t, {10, 10}, 7, g);
  EXPECT_EQ(mg::reduce(a, 0), 700);
}

}  // namespace
