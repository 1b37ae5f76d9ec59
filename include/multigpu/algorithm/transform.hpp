#pragma once
// transform: out[i] = f(in[i]) or f(a[i], b[i]), one grid per segment through
// cub::DeviceTransform (what thrust::transform uses). Operands that do not line up with
// the first input are redistributed first (slower); aligned ones cost nothing extra.
// In place (the output is an input, from the same index) is allowed. An output that
// overlaps an input of the same vector at another index (a shift) is written to a
// temporary first, so the result is as if every input were read before any output written.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_transform.cuh>
#include <cuda/std/tuple>

namespace multigpu {

/// out[i] = f(first[i]) for i in [0, last - first).
template <segmented_iterator_type In, class U, class F>
void transform(In first, In last, segmented_iterator<U, false> out, F f) {
  detail::check_device_operator<F>();
  using T = typename In::value_type;
  const nvtx_range range_mark("transform", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("transform", first, last);
  if (count == 0) return;
  auto& out_vector = detail::unpack_output("transform", out, count);
  detail::range_ref<T> range(*v, begin, count);
  detail::aligned_output<U> result(range, out_vector, out.index());
  detail::for_each_piece(range, [&](const detail::piece_context& ctx) {
    const T* in = range.data(ctx.index);
    U* o = result.data(ctx.index);
    detail::check_cub(detail::with_count(ctx.count, [&](auto n) {
                        return cub::DeviceTransform::Transform(in, o, n, f, ctx.stream);
                      }),
                      "cub::DeviceTransform::Transform", std::source_location::current());
  });
  result.commit();
}

/// out[i] = f(first1[i], first2[i]) for i in [0, last1 - first1).
template <segmented_iterator_type In1, segmented_iterator_type In2, class U, class F>
void transform(In1 first1, In1 last1, In2 first2, segmented_iterator<U, false> out, F f) {
  detail::check_device_operator<F>();
  using A = typename In1::value_type;
  using B = typename In2::value_type;
  const nvtx_range range_mark("transform", static_cast<std::uint64_t>(last1 - first1));
  auto [v, begin, count] = detail::unpack_range("transform", first1, last1);
  if (count == 0) return;
  auto& b_vector = detail::unpack_output("transform", first2, count, "second input");
  auto& out_vector = detail::unpack_output("transform", out, count);
  detail::range_ref<A> range(*v, begin, count);
  detail::aligned_input<B> second(range, b_vector, first2.index());
  // An output shifted against either input goes through a temporary (see aligned_output).
  detail::aligned_output<U> result(range, out_vector, out.index(),
                                   detail::overlaps_shifted(b_vector, first2.index(), out_vector, out.index(), count));
  detail::for_each_piece(range, [&](const detail::piece_context& ctx) {
    const A* a = range.data(ctx.index);
    const B* b = second.data(ctx.index);
    U* o = result.data(ctx.index);
    detail::check_cub(detail::with_count(ctx.count, [&](auto n) {
                        return cub::DeviceTransform::Transform(cuda::std::make_tuple(a, b), o, n, f, ctx.stream);
                      }),
                      "cub::DeviceTransform::Transform", std::source_location::current());
  });
  result.commit();
}

template <class T, class U, class F>
void transform(const distributed_vector<T>& in, distributed_vector<U>& out, F f) {
  detail::expect_same_length("transform", in.size(), out.size());
  transform(in.begin(), in.end(), out.begin(), f);
}

template <class A, class B, class U, class F>
void transform(const distributed_vector<A>& a, const distributed_vector<B>& b, distributed_vector<U>& out, F f) {
  detail::expect_same_length("transform", a.size(), b.size());
  detail::expect_same_length("transform", a.size(), out.size());
  transform(a.begin(), a.end(), b.begin(), out.begin(), f);
}

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, ...) ------

/// out[i] = f(in[i]) with the input as a view.
template <segmented_range R, class U, class F>
void transform(R&& in, segmented_iterator<U, false> out, F f) {
  multigpu::transform(std::ranges::begin(in), std::ranges::end(in), out, f);
}

/// out[i] = f(in[i]) between two views of the same length.
template <segmented_range R, segmented_range O, class F>
  requires std::same_as<std::ranges::iterator_t<O>, segmented_iterator<std::ranges::range_value_t<O>, false>>
void transform(R&& in, O&& out, F f) {
  detail::expect_same_length("transform", static_cast<std::size_t>(std::ranges::distance(in)),
                             static_cast<std::size_t>(std::ranges::distance(out)));
  multigpu::transform(std::ranges::begin(in), std::ranges::end(in), std::ranges::begin(out), f);
}

/// out[i] = f(a[i], b[i]) with both inputs as views of the same length.
template <segmented_range R1, segmented_range R2, class U, class F>
void transform(R1&& a, R2&& b, segmented_iterator<U, false> out, F f) {
  detail::expect_same_length("transform", static_cast<std::size_t>(std::ranges::distance(a)),
                             static_cast<std::size_t>(std::ranges::distance(b)));
  multigpu::transform(std::ranges::begin(a), std::ranges::end(a), std::ranges::begin(b), out, f);
}

}  // namespace multigpu
