#pragma once
// The host model of N-D indices that the mdarray tests compare against, shared by the CPU
// plan tests and the GPU tests: row-major walks and linear positions of multi-indices.

#include <multigpu/mdarray/decomposition.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace md_model {

template <std::size_t R>
using idx = multigpu::md_index<R>;

/// Calls f(i) for every multi-index of a box of `extent`, row-major.
template <std::size_t R, class F>
void for_each_index(const idx<R>& extent, F&& f) {
  if (multigpu::detail::product(extent) == 0) return;
  idx<R> i{};
  while (true) {
    f(i);
    std::size_t d = R;
    while (d-- > 0) {
      if (++i[d] < extent[d]) break;
      i[d] = 0;
      if (d == 0) return;
    }
  }
}

/// The row-major position of multi-index i in a box of extents n.
template <std::size_t R>
std::size_t linear(const idx<R>& n, const idx<R>& i) {
  std::size_t l = 0;
  for (std::size_t d = 0; d < R; ++d) l = l * n[d] + i[d];
  return l;
}

/// What a halo cell at global index g (possibly outside the array) must hold: the element's
/// global linear index + 1 after periodic wrapping, or the fixed dimension's marker, or
/// nothing (std::nullopt: "none" boundaries leave the cell alone).
template <std::size_t R>
std::optional<std::int64_t> expected_cell(const idx<R>& n, const std::array<std::int64_t, R>& g,
                                          const std::array<multigpu::boundary_kind, R>& b) {
  idx<R> wrapped{};
  for (std::size_t d = 0; d < R; ++d) {
    const auto nd = static_cast<std::int64_t>(n[d]);
    if (g[d] >= 0 && g[d] < nd) {
      wrapped[d] = static_cast<std::size_t>(g[d]);
    } else if (b[d] == multigpu::boundary_kind::periodic) {
      wrapped[d] = static_cast<std::size_t>(((g[d] % nd) + nd) % nd);
    } else {
      if (b[d] == multigpu::boundary_kind::fixed) return -static_cast<std::int64_t>(d) - 1;  // the fill marker
      return std::nullopt;
    }
  }
  std::int64_t linear = 0;
  for (std::size_t d = 0; d < R; ++d) linear = linear * static_cast<std::int64_t>(n[d]) + static_cast<std::int64_t>(wrapped[d]);
  return linear + 1;
}

}  // namespace md_model
