#pragma once
// for_each_tile: the custom-algorithm door of N-D arrays, as for_each_segment is for vectors.
// f(tile) runs on the host once per non-empty tile, in slot order, with the tile's device
// current; enqueue kernels on tile.stream and they stay ordered with every other call on the
// array. The two-array form hands f the matching tiles of arrays laid out alike.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>

namespace multigpu {

namespace detail {
/// Arrays that work tile by tile together: same group, extents and grid (std::invalid_argument
/// naming what differs otherwise).
template <class A, class B>
void expect_same_tiles(const A& a, const B& b, const char* what) {
  MULTIGPU_EXPECTS(a.extents() == b.extents(),
                   concat(what, ": arrays of extents (", format_index(a.extents(), " x "), ") and (",
                          format_index(b.extents(), " x "), ")"));
  MULTIGPU_EXPECTS(a.group() == b.group(), concat(what, ": the arrays are on different groups"));
  MULTIGPU_EXPECTS(a.layout().grid() == b.layout().grid(),
                   concat(what, ": the arrays split over different grids (", format_index(a.layout().grid(), " x "),
                          " and ", format_index(b.layout().grid(), " x "),
                          "); copy one onto the other's layout first (multigpu::copy)"));
}
}  // namespace detail

template <class T, std::size_t Rank, class F>
void for_each_tile(distributed_mdarray<T, Rank>& a, F&& f) {
  const nvtx_range range("for_each_tile", a.size());
  for (std::size_t s = 0; s < a.tile_count(); ++s) {
    auto tile = a.tile(s);
    if (tile.empty()) continue;
    device_guard guard(tile.device);
    f(tile);
  }
}

template <class T, std::size_t Rank, class U, class F>
void for_each_tile(distributed_mdarray<T, Rank>& a, distributed_mdarray<U, Rank>& b, F&& f) {
  const nvtx_range range("for_each_tile", a.size());
  detail::expect_same_tiles(a, b, "for_each_tile");
  for (std::size_t s = 0; s < a.tile_count(); ++s) {
    auto tile = a.tile(s);
    if (tile.empty()) continue;
    device_guard guard(tile.device);
    f(tile, b.tile(s));
  }
}

}  // namespace multigpu
