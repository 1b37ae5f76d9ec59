#pragma once
// One value per segment, merged like reduce merges its partials: for custom sharded
// algorithms that produce a per-device result (a count, a minimum index, a norm) and need
// it combined across devices without hand-written cross-device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/extension/for_each_segment.hpp>

namespace multigpu {

/// For every non-empty segment, f(seg, U* out) enqueues on seg.stream() work that writes
/// the segment's value to *out (device memory reachable from seg.device()). The values are
/// folded as init op v0 op v1 ... in slot order (op associative, device-callable) on the
/// first segment's device; get() on the result waits for it.
template <distributed_vector_type V, class U, class Op, class F>
future<U> reduce_segments_async(V&& v, U init, Op op, F&& f) {
  const nvtx_range range("reduce_segments", v.size());
  using T = typename std::remove_cvref_t<V>::value_type;
  if (v.size() == 0) return future<U>(init);
  // The non-empty segments are the pieces of the whole range; the values meet like the
  // partials of reduce (detail/collective/collectives.hpp), folded after init in slot order.
  detail::range_ref<T> range_of_v(v, 0, v.size());
  return detail::reduce_pieces<U, U>(
      range_of_v, op, init,
      [&](const detail::piece_context& ctx, U* out, bool) { f(v.segment(ctx.slot), out); }, &init);
}

template <distributed_vector_type V, class U, class Op, class F>
U reduce_segments(V&& v, U init, Op op, F&& f) {
  return reduce_segments_async(std::forward<V>(v), init, op, std::forward<F>(f)).get();
}

}  // namespace multigpu
