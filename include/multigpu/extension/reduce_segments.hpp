#pragma once
// One value per segment, merged like reduce merges its partials: for custom sharded
// algorithms that produce a per-device result (a count, a minimum index, a norm) and need
// it combined across devices without hand-written cross-device code.

#include <multigpu/algorithm/detail/merge.hpp>
#include <multigpu/extension/for_each_segment.hpp>

namespace multigpu {

/// For every non-empty segment, f(seg, U* out) enqueues on seg.stream() work that writes
/// the segment's value to *out (device memory reachable from seg.device()). The values are
/// folded as init op v0 op v1 ... in slot order (op associative, device-callable) on the
/// first segment's device; get() on the result waits for it.
template <distributed_vector_type V, class U, class Op, class F>
future<U> reduce_segments_async(V&& v, U init, Op op, F&& f) {
  const nvtx_range range("reduce_segments", v.size());
  std::vector<std::size_t> slots;
  for (std::size_t s = 0; s < v.segment_count(); ++s)
    if (!v.segment(s).empty()) slots.push_back(s);
  if (slots.empty()) return future<U>(init);
  const device_group& group = v.group();
  detail::group_state& g = group.state();
  const std::size_t root = slots.front();
  staging_pool::lease result = g.staging().acquire(sizeof(U));
  U* result_slot = result.template as<U>();
  detail::partial_store<U> values(group, slots, slots.size(), merge_kind::reduction);
  device_guard guard(g.device(root));
  result.order_before(g.stream(root));
  for (std::size_t i = 0; i < slots.size(); ++i) {
    auto seg = v.segment(slots[i]);
    guard.set(seg.device());
    values.prepare(slots[i]);
    f(seg, values.data() + i);
    g.order(slots[i], root);
  }
  guard.set(g.device(root));
  detail::fold_partials<<<1, 1, 0, g.stream(root)>>>(values.data(), slots.size(), op, result_slot, init, true);
  detail::check_launch("fold_partials");
  values.finish(root);
  result.fence(g.device(root), g.stream(root));
  event_pool::handle done = g.events().record(g.device(root), g.stream(root));
  return future<U>(group, std::move(result), result_slot, std::move(done));
}

template <distributed_vector_type V, class U, class Op, class F>
U reduce_segments(V&& v, U init, Op op, F&& f) {
  return reduce_segments_async(std::forward<V>(v), init, op, std::forward<F>(f)).get();
}

}  // namespace multigpu
