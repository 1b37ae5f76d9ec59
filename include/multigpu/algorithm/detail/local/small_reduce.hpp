#pragma once
// A reduction of one small piece in one launch, for operators known or declared commutative.
// CUB's device reduction is two launches above one tile of its own (about 4096 floats): a
// grid of partial reductions, then a single block that folds them. A piece of up to
// small_reduce_shape<A>::limit elements (A: the accumulator) is reduced here by one block
// instead. Each thread
// folds a strided subsequence with `items` loads in flight per round, and cub::BlockReduce
// combines the threads. It accumulates in the type CUB's reduction would (so that a piece's
// result does not depend on which of the two ran), and the order of combination differs from
// CUB's, which a commutative operator allows. This is what takes the second launch off the
// local step of reduce, transform_reduce, dot, count, min/max_element and the scans' first
// round when pieces are small.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/core/diagnostics.hpp>

#include <cub/block/block_reduce.cuh>
#include <cuda/std/functional>
#include <cuda/std/iterator>
#include <cuda/std/type_traits>

#include <cstddef>
#include <cstdint>

namespace multigpu::detail {

/// The type CUB's reduction accumulates in (cub/device/dispatch/dispatch_reduce.cuh, after
/// P2322R6): what the operator returns for the initial value and a transformed item, decayed.
/// For transform_reduce(floats, 0, plus, x / 2) that is float, not the int of the result.
/// Written with public traits, so that it does not lean on CCCL's internal names.
template <class Input, class Transform, class POp, class P>
using small_reduce_accum_t = ::cuda::std::decay_t<::cuda::std::invoke_result_t<
    POp, P, ::cuda::std::invoke_result_t<Transform, typename ::cuda::std::iterator_traits<Input>::value_type>>>;

/// The block shape of small_reduce for an accumulator of type A (values in local/tuning.hpp):
/// 512 threads, and as many loads in flight per thread and round as keep the registers within
/// 128 a thread (16 for 4-byte accumulators, 8 for 8-byte, 4 above).
template <class A>
struct small_reduce_shape {
  static constexpr int threads = tuning::small_reduce_threads;
  static constexpr int items = tuning::small_reduce_items<sizeof(A)>;
  /// Pieces of at most this many elements take the one-launch reduction: 16384 (32 a thread)
  /// for accumulators of up to 8 bytes, 4096 up to 32 bytes; accumulators over 32 bytes never
  /// do. The limit counts elements, not accumulator bytes: count_if of floats accumulates in
  /// size_t, and a piece of 16384 floats is still one block's work (four rounds of 8 loads a
  /// thread), while CUB's two launches of it cost the host more than the launch they add.
  static constexpr std::size_t limit = tuning::small_reduce_limit<sizeof(A)>;
};

/// *out = start op transform(in[0]) op ... op transform(in[n-1]) in some order, accumulated in
/// A, n <= limit, op commutative. Thread t folds elements t, t + threads, t + 2 threads, ...;
/// a thread with no element (n < threads) starts from in[0] and is left out of the block's
/// reduction, so that no value is ever read uninitialised.
template <class Shape, class A, class Input, class Transform, class P, class POp>
__global__ void __launch_bounds__(Shape::threads)
    small_reduce_kernel(Input in, std::uint32_t n, Transform transform, POp op, P start, P* out) {
  using block_reduce = cub::BlockReduce<A, Shape::threads>;
  __shared__ typename block_reduce::TempStorage shared;
  const auto t = static_cast<std::uint32_t>(threadIdx.x);
  if (n == 0) {
    if (t == 0) *out = start;
    return;
  }
  A total = static_cast<A>(transform(in[t < n ? t : 0]));
  constexpr auto threads = static_cast<std::uint32_t>(Shape::threads);
  for (std::uint32_t base = threads; base < n; base += threads * Shape::items) {
#pragma unroll
    for (int j = 0; j < Shape::items; ++j) {
      const std::uint32_t i = base + static_cast<std::uint32_t>(j) * threads + t;
      if (i < n) total = static_cast<A>(op(total, static_cast<A>(transform(in[i]))));
    }
  }
  const int valid = n < threads ? static_cast<int>(n) : Shape::threads;
  const A aggregate = block_reduce(shared).Reduce(total, op, valid);
  if (t == 0) *out = static_cast<P>(op(start, aggregate));
}

/// Reduces n elements into *out on `stream` in one launch (see small_reduce_kernel) and returns
/// true when n is within small_reduce_shape's limit for the accumulator; otherwise launches
/// nothing and returns false (the kernel is not even compiled for accumulators that never fit).
template <class Input, class Transform, class P, class POp>
bool small_reduce(Input in, std::size_t n, Transform transform, POp op, P start, P* out, cudaStream_t stream) {
  using accum = small_reduce_accum_t<Input, Transform, POp, P>;
  using shape = small_reduce_shape<accum>;
  if constexpr (shape::limit == 0) {
    return false;
  } else {
    if (n > shape::limit) return false;
    diagnostics::note(diagnostics::path::one_launch_reduce);
    small_reduce_kernel<shape, accum><<<1, shape::threads, 0, stream>>>(in, static_cast<std::uint32_t>(n), transform,
                                                                          op, start, out);
    check_launch("small reduce");
    observe_work(stream, "small reduce");
    return true;
  }
}

}  // namespace multigpu::detail
