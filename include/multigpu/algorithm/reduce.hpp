#pragma once
// reduce and reduce_async: each segment is reduced on its own device (CUB, temporary
// storage from the slot's pool) and the partials are folded in segment order. The operator
// must be associative; it need not be commutative: operators not known to be commutative
// keep element order (see detail/ordered_reduce.hpp), and multigpu::commutative(op) lets a
// user declare otherwise. Device operators must be callable on the host's view of their
// type too: write them as functors or __host__ __device__ lambdas.
// As std::reduce, the result and the accumulator have the type of `init`: reduce(ints, 0LL)
// sums in long long, reduce(ints, 0.5) in double (docs/api.md#reduce).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collectives.hpp>
#include <multigpu/algorithm/detail/functors.hpp>
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
  if constexpr (!std::is_same_v<Init, T>) {
    // Each element is read as Init: one fused pass, on the same one-launch, CUB and
    // order-keeping paths as transform_reduce.
    static_assert(std::is_constructible_v<Init, const T&>,
                  "multigpu::reduce accumulates in the type of init, as std::reduce: the element type "
                  "must convert to it (pass an init of the element type, or use transform_reduce)");
    return transform_reduce_async(first, last, init, op, detail::convert_to<Init>{});
  } else {
    using traits = detail::partial_traits<T, Op>;
    using P = typename traits::partial;
    const nvtx_range range_mark("reduce", static_cast<std::uint64_t>(last - first));
    auto [v, begin, count] = detail::unpack_range("reduce", first, last);
    if (count == 0) return future<T>(init);
    detail::range_ref<T> range(*v, begin, count);
    const auto pop = traits::lift(op);
    detail::call_fingerprint fingerprint;
    fingerprint.add(init);
    return detail::reduce_pieces<T, P>(
        range, pop, init,
        [&](const detail::piece_context& ctx, P* out, bool first_piece) {
          detail::reduce_one_piece<traits>(ctx, static_cast<const T*>(range.data(ctx.index)),
                                           detail::identity_transform{}, pop,
                                           first_piece ? traits::wrap(init) : traits::empty(), out);
        },
        static_cast<const P*>(nullptr), &fingerprint);
  }
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
