#pragma once
// reduce and reduce_async: each segment is reduced on its own device (CUB, temporary
// storage from the slot's pool) and the partials are folded in segment order. The operator
// must be associative; it need not be commutative: operators not known to be commutative
// keep element order (see detail/local/ordered_reduce.hpp), and multigpu::commutative(op) lets a
// user declare otherwise. Device operators must be callable on the host's view of their
// type too: write them as functors or __host__ __device__ lambdas.
// As std::reduce, the result and the accumulator have the type of `init`: reduce(ints, 0LL)
// sums in long long, reduce(ints, 0.5) in double (docs/api.md#reduce).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/transform_reduce.hpp>

#include <cuda/std/functional>

#include <type_traits>

namespace multigpu {

/// Starts init op x[first] op ... op x[last-1], accumulated in Init; get() on the result
/// waits for it.
template <segmented_iterator_type I, class Init, class Op = cuda::std::plus<>>
future<Init> reduce_async(I first, I last, Init init, Op op = {}) {
  using T = typename I::value_type;
  detail::check_reduction_operator<Init, T, Op>();
  static_assert(std::is_constructible_v<Init, const T&>,
                "multigpu::reduce accumulates in the type of init, as std::reduce: the element type must "
                "convert to it (pass an init of the element type, or use transform_reduce)");
  // Another Init reads each element as Init: one fused pass, on the same one-launch, CUB and
  // order-keeping paths.
  using read_as = std::conditional_t<std::is_same_v<Init, T>, detail::identity_transform, detail::convert_to<Init>>;
  return detail::transform_reduce_range("reduce", first, last, init, op, read_as{});
}

template <class T, class Init, class Op = cuda::std::plus<>>
future<Init> reduce_async(const distributed_vector<T>& v, Init init, Op op = {}) {
  return reduce_async(v.begin(), v.end(), init, op);
}

template <class T>
future<T> reduce_async(const distributed_vector<T>& v) {
  return reduce_async(v.begin(), v.end(), T{}, cuda::std::plus<>{});
}

template <segmented_iterator_type I, class Init, class Op = cuda::std::plus<>>
Init reduce(I first, I last, Init init, Op op = {}) {
  return reduce_async(first, last, init, op).get();
}

/// T{} + every element.
template <class T>
T reduce(const distributed_vector<T>& v) {
  return reduce_async(v).get();
}

template <class T, class Init, class Op = cuda::std::plus<>>
Init reduce(const distributed_vector<T>& v, Init init, Op op = {}) {
  return reduce_async(v, init, op).get();
}

/// Views of parts of vectors (std::ranges::subrange of segmented iterators, views::take, ...).
template <segmented_range R, class Init, class Op = cuda::std::plus<>>
auto reduce_async(R&& r, Init init, Op op = {}) {
  return multigpu::reduce_async(std::ranges::begin(r), std::ranges::end(r), init, op);
}
template <segmented_range R, class Init, class Op = cuda::std::plus<>>
auto reduce(R&& r, Init init, Op op = {}) {
  return multigpu::reduce(std::ranges::begin(r), std::ranges::end(r), init, op);
}
template <segmented_range R>
auto reduce(R&& r) {
  return multigpu::reduce(std::ranges::begin(r), std::ranges::end(r), std::ranges::range_value_t<R>{});
}

}  // namespace multigpu
