#pragma once
// An order-preserving reduction for operators that are associative but not known to be
// commutative (CUB's device-wide reduction may combine elements out of order). Each block
// folds one contiguous span of the input tile by tile: threads own consecutive items
// (a blocked arrangement, loaded through a warp transpose so that reads stay coalesced),
// fold them in order, and a raking block reduction, which keeps order, combines the
// threads. A second launch folds the per-block results in order.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/core/diagnostics.hpp>

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cuda/std/iterator>

#include <algorithm>

namespace multigpu::detail {

/// How a block stages its items and its threads' totals in shared memory, within `budget`
/// bytes: items through a warp transpose (the whole block at once, or one warp at a time),
/// or straight into registers when even one warp's items are too wide; threads' totals by a
/// raking reduction, or warp by warp, which needs one partial per warp. Every one of these
/// keeps the order of the items.
template <int Block, int Items, class Item, class P>
struct ordered_reduce_staging {
  static constexpr std::size_t budget = tuning::ordered_reduce_staging_bytes;
  template <cub::BlockLoadAlgorithm A>
  static constexpr std::size_t load_bytes = sizeof(typename cub::BlockLoad<Item, Block, Items, A>::TempStorage);
  template <cub::BlockReduceAlgorithm A>
  static constexpr std::size_t reduce_bytes = sizeof(typename cub::BlockReduce<P, Block, A>::TempStorage);

  static constexpr cub::BlockLoadAlgorithm load =
      load_bytes<cub::BLOCK_LOAD_WARP_TRANSPOSE> <= budget              ? cub::BLOCK_LOAD_WARP_TRANSPOSE
      : load_bytes<cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED> <= budget ? cub::BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED
                                                                         : cub::BLOCK_LOAD_DIRECT;
  static constexpr cub::BlockReduceAlgorithm reduce = reduce_bytes<cub::BLOCK_REDUCE_RAKING> <= budget
                                                          ? cub::BLOCK_REDUCE_RAKING
                                                          : cub::BLOCK_REDUCE_WARP_REDUCTIONS;
  static_assert(reduce_bytes<reduce> <= 40 * 1024,
                "multigpu: an order-keeping reduction (an operator not declared commutative) keeps one partial "
                "per warp in shared memory, and this partial type is too large for it (over about 4 KiB); "
                "reduce a smaller type, or declare the operator multigpu::commutative if it is");
};

template <int Block, int Items, class Input, class Transform, class P, class POp>
__global__ void __launch_bounds__(Block)
    ordered_reduce_kernel(Input in, std::size_t n, Transform transform, POp op, P start, P empty, P* out) {
  using item_t = typename cuda::std::iterator_traits<Input>::value_type;
  using staging = ordered_reduce_staging<Block, Items, item_t, P>;
  using block_load = cub::BlockLoad<item_t, Block, Items, staging::load>;
  using block_reduce = cub::BlockReduce<P, Block, staging::reduce>;
  __shared__ union {
    typename block_load::TempStorage load;
    typename block_reduce::TempStorage reduce;
  } shared;

  constexpr std::size_t tile = static_cast<std::size_t>(Block) * Items;
  const std::size_t tiles = (n + tile - 1) / tile;
  const std::size_t tiles_per_block = (tiles + gridDim.x - 1) / gridDim.x;
  const std::size_t begin = blockIdx.x * tiles_per_block * tile;
  const std::size_t end = begin + tiles_per_block * tile < n ? begin + tiles_per_block * tile : n;

  P block_total = start;
  for (std::size_t base = begin; base < end; base += tile) {
    const std::size_t left = end - base;
    const int valid = left < tile ? static_cast<int>(left) : static_cast<int>(tile);
    item_t items[Items];
    if (valid == static_cast<int>(tile))
      block_load(shared.load).Load(in + base, items);
    else
      block_load(shared.load).Load(in + base, items, valid);
    __syncthreads();
    P thread_total = empty;
#pragma unroll
    for (int j = 0; j < Items; ++j)
      if (static_cast<int>(threadIdx.x) * Items + j < valid) thread_total = op(thread_total, P(transform(items[j])));
    P tile_total = block_reduce(shared.reduce).Reduce(thread_total, op);
    __syncthreads();
    if (threadIdx.x == 0) block_total = op(block_total, tile_total);
  }
  if (threadIdx.x == 0) out[blockIdx.x] = block_total;
}

struct identity_transform {
  template <class X>
  __host__ __device__ const X& operator()(const X& x) const {
    return x;
  }
};

/// *out = init op transform(in[0]) op ... op transform(in[n-1]), in order; n > 0. The block
/// partials live in the slot's scratch.
template <class Input, class Transform, class P, class POp>
void ordered_reduce(Input in, std::size_t n, Transform transform, POp op, P init, P empty, P* out,
                    slot_scratch& scratch, cudaStream_t stream) {
  diagnostics::note(diagnostics::path::ordered_reduce);
  constexpr int block = tuning::ordered_reduce_threads;
  using item_t = typename cuda::std::iterator_traits<Input>::value_type;
  constexpr int items = tuning::ordered_reduce_items<sizeof(item_t)>;
  constexpr std::size_t tile = static_cast<std::size_t>(block) * items;
  const std::size_t blocks = std::min<std::size_t>(
      (n + tile - 1) / tile,
      static_cast<std::size_t>(tuning::ordered_reduce_blocks_per_multiprocessor * scratch.multiprocessors()));
  if (blocks == 1) {
    ordered_reduce_kernel<block, items><<<1, block, 0, stream>>>(in, n, transform, op, init, empty, out);
    check_launch("ordered_reduce_kernel");
    observe_work(stream, "ordered_reduce");
    return;
  }
  P* partials = static_cast<P*>(scratch.auxiliary(blocks * sizeof(P)));
  ordered_reduce_kernel<block, items>
      <<<static_cast<unsigned>(blocks), block, 0, stream>>>(in, n, transform, op, empty, empty, partials);
  check_launch("ordered_reduce_kernel");
  constexpr int p_items = tuning::ordered_reduce_items<sizeof(P)>;
  ordered_reduce_kernel<block, p_items>
      <<<1, block, 0, stream>>>(static_cast<const P*>(partials), blocks, identity_transform{}, op, init, empty, out);
  check_launch("ordered_reduce_kernel");
  observe_work(stream, "ordered_reduce");
}

}  // namespace multigpu::detail
