#pragma once
// transform_reduce (unary and binary) and dot: the transform is fused into the reduction's
// loads, one pass over the data per device; partials merge as for reduce.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/transform_reduce.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>

#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

namespace multigpu {

/// init R t(x[first]) R ... R t(x[last-1]).
template <segmented_iterator_type I, class U, class R, class F>
future<U> transform_reduce_async(I first, I last, U init, R reduce_op, F transform_op) {
  detail::check_host_device_operator<R>();
  return detail::transform_reduce_range("transform_reduce", first, last, init, reduce_op, transform_op);
}

/// init R c(a[0], b[0]) R ... : the second range starts at first2 and has the same length.
template <segmented_iterator_type I1, segmented_iterator_type I2, class U, class R, class C>
future<U> transform_reduce_async(I1 first1, I1 last1, I2 first2, U init, R reduce_op, C combine_op) {
  using A = typename I1::value_type;
  detail::check_host_device_operator<R>();
  using B = typename I2::value_type;
  using traits = detail::partial_traits<U, R>;
  using P = typename traits::partial;
  const nvtx_range range_mark("transform_reduce", static_cast<std::uint64_t>(last1 - first1));
  auto [v, begin, count] = detail::unpack_range("transform_reduce", first1, last1);
  if (count == 0) return future<U>(init);
  const auto& b_vector = detail::unpack_output("transform_reduce", first2, count, "second input");
  detail::range_ref<A> range(*v, begin, count);
  detail::aligned_input<B> second(range, b_vector, first2.index());
  const auto lifted_op = traits::lift(reduce_op);
  return detail::reduce_pieces<U, P>(
      range, lifted_op, init,
      detail::replayable(
          [=](const detail::piece_context& ctx, P* out, bool first_piece, const A* a, const B* b) {
            detail::zip_apply<A, B, C> zip{a, b, combine_op};
            detail::reduce_one_piece<traits>(ctx, thrust::counting_iterator<std::size_t>(0), zip, lifted_op,
                                             first_piece ? traits::wrap(init) : traits::empty(), out);
          },
          detail::depends_on(init, combine_op), range, second));
}

template <class T, class U, class R, class F>
U transform_reduce(const distributed_vector<T>& v, U init, R reduce_op, F transform_op) {
  return transform_reduce_async(v.begin(), v.end(), init, reduce_op, transform_op).get();
}

template <class A, class B, class U, class R, class C>
U transform_reduce(const distributed_vector<A>& a, const distributed_vector<B>& b, U init, R reduce_op, C combine_op) {
  detail::expect_same_length("transform_reduce", a.size(), b.size());
  return transform_reduce_async(a.begin(), a.end(), b.begin(), init, reduce_op, combine_op).get();
}

template <segmented_iterator_type I, class U, class R, class F>
U transform_reduce(I first, I last, U init, R reduce_op, F transform_op) {
  return transform_reduce_async(first, last, init, reduce_op, transform_op).get();
}

template <segmented_iterator_type I1, segmented_iterator_type I2, class U, class R, class C>
U transform_reduce(I1 first1, I1 last1, I2 first2, U init, R reduce_op, C combine_op) {
  return transform_reduce_async(first1, last1, first2, init, reduce_op, combine_op).get();
}

/// Sum of a[i] * b[i], starting from T{}.
template <class T>
T dot(const distributed_vector<T>& a, const distributed_vector<T>& b) {
  return transform_reduce(a, b, T{}, cuda::std::plus<>{}, cuda::std::multiplies<>{});
}

/// Views of parts of vectors.
template <segmented_range R, class U, class Rd, class F>
U transform_reduce(R&& r, U init, Rd reduce_op, F transform_op) {
  return multigpu::transform_reduce(std::ranges::begin(r), std::ranges::end(r), init, reduce_op, transform_op);
}
template <segmented_range R1, segmented_range R2, class U, class Rd, class C>
U transform_reduce(R1&& a, R2&& b, U init, Rd reduce_op, C combine_op) {
  detail::expect_same_length("transform_reduce", std::ranges::size(a), std::ranges::size(b));
  return multigpu::transform_reduce(std::ranges::begin(a), std::ranges::end(a), std::ranges::begin(b), init, reduce_op,
                                    combine_op);
}

}  // namespace multigpu
