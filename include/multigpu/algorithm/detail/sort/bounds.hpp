#pragma once
// lower_bound and upper_bound in a sorted vector: one binary search per segment, added up by
// the "reduce partials in order" collective.

#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/container/distributed_vector.hpp>

#include <cuda/std/functional>

#include <cstddef>
#include <cstdint>

namespace multigpu::detail {

/// The first position p in [lo, n) of the sorted x with !(x[p] < value) (lower) or
/// value < x[p] (upper): a binary search from one thread. Shared by the bounds below and the
/// team sort's pivot ranks (team_sort.hpp).
template <class T, class Comp>
__device__ std::uint64_t bound_position(const T* x, std::uint64_t lo, std::uint64_t n, const T& value, const Comp& comp,
                                        bool upper) {
  std::uint64_t hi = n;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    const bool go_right = upper ? !comp(value, x[mid]) : comp(x[mid], value);
    if (go_right)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// *out = bound_position over the whole run.
template <class T, class Comp>
__global__ void bound_in_run(const T* x, std::size_t n, T value, Comp comp, bool upper, std::size_t* out) {
  *out = static_cast<std::size_t>(bound_position(x, 0, n, value, comp, upper));
}

/// The position of lower_bound (upper = false) or upper_bound in a sorted vector: the sum
/// over segments of each segment's own bound.
template <class T, class Comp>
std::size_t bound_impl(const distributed_vector<T>& v, const T& value, const Comp& comp, bool upper) {
  if (v.size() == 0) return 0;
  // Each segment's bound is a partial of reduce_pieces, added up on the device: the searches
  // run at once and the host waits once.
  range_ref<T> range(v, 0, v.size());
  return reduce_pieces<std::size_t, std::size_t>(range, cuda::std::plus<>{}, std::size_t{0},
                                                 [&](const piece_context& ctx, std::size_t* out, bool) {
                                                   bound_in_run<<<1, 1, 0, ctx.stream>>>(range.data(ctx.index),
                                                                                         ctx.count, value, comp, upper,
                                                                                         out);
                                                   check_launch(upper ? "upper_bound" : "lower_bound");
                                                 })
      .get();
}

}  // namespace multigpu::detail
