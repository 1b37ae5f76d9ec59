#pragma once
// The host model of N-D indices that the mdarray tests compare against, shared by the CPU
// plan tests and the GPU tests: row-major walks and linear positions of multi-indices.

#include <multigpu/mdarray/decomposition.hpp>

#include <cstddef>

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

}  // namespace md_model
