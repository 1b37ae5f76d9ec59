#pragma once
// The one-input reduction behind reduce and transform_reduce: the transform is fused into the
// reduction's loads, one pass over the data per device; partials merge in order
// (detail/collective/collectives.hpp).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cstdint>

namespace multigpu::detail {

/// init R t(x[first]) R ... R t(x[last-1]): the one-input reduction behind reduce and
/// transform_reduce (an identity transform is CUB's plain Reduce).
template <segmented_iterator_type I, class U, class R, class F>
future<U> transform_reduce_range(const char* algorithm, I first, I last, U init, R reduce_op, F transform_op) {
  using T = typename I::value_type;
  using traits = partial_traits<U, R>;
  using P = typename traits::partial;
  const nvtx_range range_mark(algorithm, static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = unpack_range(algorithm, first, last);
  if (count == 0) return future<U>(init);
  range_ref<T> range(*v, begin, count);
  const auto lifted_op = traits::lift(reduce_op);
  return reduce_pieces<U, P>(range, lifted_op, init,
                             replayable(
                                 [=](const piece_context& ctx, P* out, bool first_piece, const T* in) {
                                   reduce_one_piece<traits>(ctx, in, transform_op, lifted_op,
                                                            first_piece ? traits::wrap(init) : traits::empty(), out);
                                 },
                                 depends_on(init, transform_op), range));
}

}  // namespace multigpu::detail
