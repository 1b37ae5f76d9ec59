#pragma once
// A scan of one small piece in one launch. CUB's device scan is always two launches (its
// tile descriptors' initialisation, then the scan), whatever the size; a piece of up to two
// tiles of one block is scanned here by a single block, tile after tile, with the running
// total carried between tiles in the block (cub::BlockScan with a prefix callback). The
// carry of a piece after the first is read from device memory when the kernel runs, as
// CUB's FutureValue is. Operators need be associative only: BlockScan keeps the order.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>

#include <cub/block/block_load.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>

#include <cstddef>
#include <cstdint>

namespace multigpu::detail {

/// The block shape of small_scan for elements of type T (values in local/tuning.hpp): 512
/// threads, and as many items per thread as keep a tile's transposition in 32 KiB of shared
/// memory (16 floats, 8 doubles).
template <class T>
struct small_scan_shape {
  static constexpr int threads = tuning::small_scan_threads;
  static constexpr int items = tuning::small_scan_items<sizeof(T)>;
  static constexpr std::size_t tile = static_cast<std::size_t>(threads) * items;
  /// Pieces of at most this many elements (two tiles) take the one-launch scan; elements over
  /// 32 bytes never do.
  static constexpr std::size_t limit = tuning::small_scan_tiles<sizeof(T)> * tile;
};

/// The running total between tiles: BlockScan's first warp calls it with each tile's
/// aggregate and uses what it returns as the tile's prefix.
template <class T, class Op>
struct running_prefix {
  T total;
  Op op;
  __device__ T operator()(const T& tile_aggregate) {
    const T before = total;
    total = op(total, tile_aggregate);
    return before;
  }
};

/// out[i] = start op in[0] op ... op in[i] (inclusive) or start op in[0] op ... op in[i-1]
/// (exclusive), for i < n, where start is *carry when carry is not null, else `init` when
/// has_init, else nothing (inclusive only). One block of Shape::threads; in place allowed.
template <bool Exclusive, class Shape, class T, class Op>
__global__ void __launch_bounds__(Shape::threads)
    small_scan_kernel(const T* in, T* out, std::uint32_t n, Op op, const T* carry, T init, bool has_init) {
  using load_t = cub::BlockLoad<T, Shape::threads, Shape::items, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using store_t = cub::BlockStore<T, Shape::threads, Shape::items, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using scan_t = cub::BlockScan<T, Shape::threads>;
  __shared__ union storage {
    typename load_t::TempStorage load;
    typename store_t::TempStorage store;
    typename scan_t::TempStorage scan;
  } temp;
  constexpr auto tile = static_cast<std::uint32_t>(Shape::tile);
  running_prefix<T, Op> prefix{carry != nullptr ? *carry : init, op};
  bool started = carry != nullptr || has_init;
  for (std::uint32_t offset = 0; offset < n; offset += tile) {
    const std::uint32_t valid = n - offset < tile ? n - offset : tile;
    T items[Shape::items];
    // A short last tile is padded with its first element: the padding comes after every
    // valid element, so no stored result depends on it.
    if (valid == tile)
      load_t(temp.load).Load(in + offset, items);
    else
      load_t(temp.load).Load(in + offset, items, static_cast<int>(valid), in[offset]);
    __syncthreads();
    if (started) {
      if constexpr (Exclusive)
        scan_t(temp.scan).ExclusiveScan(items, items, op, prefix);
      else
        scan_t(temp.scan).InclusiveScan(items, items, op, prefix);
    } else {
      T aggregate;
      scan_t(temp.scan).InclusiveScan(items, items, op, aggregate);
      prefix.total = aggregate;
      started = true;
    }
    __syncthreads();
    if (valid == tile)
      store_t(temp.store).Store(out + offset, items);
    else
      store_t(temp.store).Store(out + offset, items, static_cast<int>(valid));
    __syncthreads();
  }
}

/// Scans n (0 < n <= small_scan_shape<T>::limit) elements on `stream` in one launch: see
/// small_scan_kernel. `init` (may be null) is read only for a scan without a carry.
template <bool Exclusive, class T, class Op>
void small_scan(const T* in, T* out, std::size_t n, Op op, const T* carry, const T* init, cudaStream_t stream) {
  using shape = small_scan_shape<T>;
  small_scan_kernel<Exclusive, shape><<<1, shape::threads, 0, stream>>>(
      in, out, static_cast<std::uint32_t>(n), op, carry, init != nullptr ? *init : T{}, init != nullptr);
  check_launch(Exclusive ? "small exclusive scan" : "small inclusive scan");
  observe_work(stream, "small scan");
}

}  // namespace multigpu::detail
