#pragma once
// The kernels of the collectives' root step (detail/collective/collectives.hpp): the fold of a
// call's partials in order, and their scan into every piece's carry. Each is one thread over
// the k partials of one call, k being the number of pieces, a handful; the collectives launch
// them on the root's stream after it has joined every step.

#include <multigpu/algorithm/detail/collective/partials.hpp>

#include <cstddef>

namespace multigpu::detail {

/// out = unwrap(p[0] op p[1] op ... op p[count-1]), or with `init` in front when has_init.
template <class P, class POp, class Out>
__global__ void fold_partials(const P* partials, std::size_t count, POp op, Out* out, P init, bool has_init) {
  P acc = has_init ? init : partials[0];
  for (std::size_t i = has_init ? 0 : 1; i < count; ++i) acc = op(acc, partials[i]);
  *out = static_cast<Out>(unwrap(acc));
}

/// carries[i] = unwrap(p[0] op ... op p[i]) for i < count: the carry of piece i + 1. One
/// thread: count is the number of pieces, a handful.
template <class P, class POp, class T>
__global__ void scan_partials(const P* partials, std::size_t count, POp op, T* carries) {
  P acc = partials[0];
  carries[0] = static_cast<T>(unwrap(acc));
  for (std::size_t i = 1; i < count; ++i) {
    acc = op(acc, partials[i]);
    carries[i] = static_cast<T>(unwrap(acc));
  }
}

}  // namespace multigpu::detail
