#pragma once
// The local step of a reduction: one piece reduced on its own device into a partial, through
// CUB's reduction when the operator is commutative (one launch of our own for a small piece,
// detail/local/small_reduce.hpp) and the order-keeping kernel otherwise. Temporary storage comes
// from the slot's persistent scratch.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/ordered_reduce.hpp>
#include <multigpu/algorithm/detail/collective/partials.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/detail/local/small_reduce.hpp>

#include <cub/device/device_reduce.cuh>

#include <cstdint>

namespace multigpu::detail {

/// *out = start op transform(in[0]) op ... op transform(in[n-1]) for one piece, on its stream:
/// CUB's reduction when the operator is commutative (one block of our own when the piece is
/// small), the order-keeping kernel otherwise.
template <class Traits, class Input, class Transform, class POp, class P>
void reduce_one_piece(const piece_context& ctx, Input in, Transform transform, POp op, P start, P* out) {
  if constexpr (Traits::commutative) {
    if (small_reduce(in, ctx.count, transform, op, start, out, ctx.stream)) return;
    if constexpr (std::is_same_v<Transform, identity_transform>) {
      cub_call(*ctx.scratch, ctx.stream, "cub::DeviceReduce::Reduce", ctx.count, [&](void* temp, std::size_t& bytes) {
        return with_count(ctx.count, [&](auto n) {
          return cub::DeviceReduce::Reduce(temp, bytes, in, out, n, op, start, ctx.stream);
        });
      });
    } else {
      cub_call(*ctx.scratch, ctx.stream, "cub::DeviceReduce::TransformReduce", ctx.count, [&](void* temp, std::size_t& bytes) {
        return with_count(ctx.count, [&](auto n) {
          return cub::DeviceReduce::TransformReduce(temp, bytes, in, out, n, op, transform, start, ctx.stream);
        });
      });
    }
  } else {
    ordered_reduce(in, ctx.count, transform, op, start, Traits::empty(), out, *ctx.scratch, ctx.stream);
  }
}

}  // namespace multigpu::detail
