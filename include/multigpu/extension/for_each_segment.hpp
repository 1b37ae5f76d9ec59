#pragma once
// The public way to write a custom sharded algorithm: f(segment_view) is called on the host
// once per non-empty segment, in slot order, with that segment's device current. Enqueue
// kernels and copies on seg.stream() (never the legacy default stream, never a device-wide
// synchronisation) and they stay ordered with every other operation on the vector.

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>

namespace multigpu {

template <class T, class F>
void for_each_segment(distributed_vector<T>& v, F&& f) {
  for (std::size_t s = 0; s < v.segment_count(); ++s) {
    segment_view<T> seg = v.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    f(seg);
  }
}

template <class T, class F>
void for_each_segment(const distributed_vector<T>& v, F&& f) {
  for (std::size_t s = 0; s < v.segment_count(); ++s) {
    segment_view<const T> seg = v.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    f(seg);
  }
}

}  // namespace multigpu
