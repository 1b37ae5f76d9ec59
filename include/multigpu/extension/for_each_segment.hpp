#pragma once
// The public way to write a custom sharded algorithm: f(segment_view) is called on the host
// once per non-empty segment, in slot order, with that segment's device current. Enqueue
// kernels and copies on seg.stream() (never the legacy default stream, never a device-wide
// synchronisation) and they stay ordered with every other operation on the vector. The
// two- and three-vector forms hand f the matching segments of vectors that share a group
// and a layout.

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>

#include <type_traits>

namespace multigpu {

template <class V>
inline constexpr bool is_distributed_vector_v = false;
template <class T>
inline constexpr bool is_distributed_vector_v<distributed_vector<T>> = true;
template <class V>
concept distributed_vector_type = is_distributed_vector_v<std::remove_cvref_t<V>>;

namespace detail {
template <class First, class Other>
void expect_same_layout_as(const First& first, const Other& other) {
  if (other.group() == first.group() && other.layout() == first.layout()) return;
  const char* why = other.group() == first.group()
                        ? "are laid out differently over the same group"
                        : "are on different groups (a group is its slots' streams and pools: two groups built "
                          "separately differ even over the same devices)";
  MULTIGPU_EXPECTS(false, concat("for_each_segment: vectors of ", first.size(), " and ", other.size(), " elements ", why,
                       "; copy one onto the other's layout first: "
                       "distributed_vector<T> aligned(a.group(), a.layout()); multigpu::copy(b, aligned);"));
}
template <class First, class... Rest>
void expect_same_layout(const First& first, const Rest&... rest) {
  (expect_same_layout_as(first, rest), ...);
}
}  // namespace detail

/// f(seg) for every non-empty segment of v; f(seg_a, seg_b) or f(seg_a, seg_b, seg_c) for
/// vectors sharing a group and layout (std::invalid_argument otherwise).
template <distributed_vector_type V, class F>
void for_each_segment(V&& v, F&& f) {
  const nvtx_range range("for_each_segment", v.size());
  for (std::size_t s = 0; s < v.segment_count(); ++s) {
    auto seg = v.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    f(seg);
  }
}

template <distributed_vector_type A, distributed_vector_type B, class F>
void for_each_segment(A&& a, B&& b, F&& f) {
  const nvtx_range range("for_each_segment", a.size());
  detail::expect_same_layout(a, b);
  for (std::size_t s = 0; s < a.segment_count(); ++s) {
    auto seg = a.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    f(seg, b.segment(s));
  }
}

template <distributed_vector_type A, distributed_vector_type B, distributed_vector_type C, class F>
void for_each_segment(A&& a, B&& b, C&& c, F&& f) {
  const nvtx_range range("for_each_segment", a.size());
  detail::expect_same_layout(a, b, c);
  for (std::size_t s = 0; s < a.segment_count(); ++s) {
    auto seg = a.segment(s);
    if (seg.empty()) continue;
    device_guard guard(seg.device());
    f(seg, b.segment(s), c.segment(s));
  }
}

}  // namespace multigpu
