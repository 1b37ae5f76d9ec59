#pragma once
// The kernels of distributed N-D arrays: strided box copies (a halo exchange's pack and unpack,
// a fixed boundary's fill, a redistribution), and one launch shape for every per-point
// algorithm over a region of a tile (fill, transform, stencils). Both take small trivially
// copyable descriptions by value; nothing is allocated for a launch.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/mdarray/decomposition.hpp>

#include <cuda/std/array>
#include <cuda/std/cstddef>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <span>

namespace multigpu::detail {

template <std::size_t Rank>
using md_point = cuda::std::array<std::size_t, Rank>;

/// Row-major strides (in elements) of a box of `extent`.
template <std::size_t Rank>
md_point<Rank> row_major_strides(const md_index<Rank>& extent) noexcept {
  md_point<Rank> stride{};
  std::size_t s = 1;
  for (std::size_t d = Rank; d-- > 0;) {
    stride[d] = s;
    s *= extent[d];
  }
  return stride;
}

template <std::size_t Rank>
std::size_t linear_offset(const md_point<Rank>& stride, const md_index<Rank>& at) noexcept {
  std::size_t o = 0;
  for (std::size_t d = 0; d < Rank; ++d) o += at[d] * stride[d];
  return o;
}

/// Where global index `global` sits in a padded tile whose first interior element is global
/// index `origin`, with halo widths `halo`.
template <std::size_t Rank>
md_index<Rank> padded_position(const md_index<Rank>& global, const md_index<Rank>& origin,
                               const md_index<Rank>& halo) noexcept {
  md_index<Rank> at{};
  for (std::size_t d = 0; d < Rank; ++d) at[d] = global[d] - origin[d] + halo[d];
  return at;
}

/// One box moved between two strided places: dst[i] = src[i], or dst[i] = value when src is null.
template <class T, std::size_t Rank>
struct strided_box {
  const T* src = nullptr;
  T* dst = nullptr;
  T value{};
  md_point<Rank> extent{};
  md_point<Rank> src_stride{};
  md_point<Rank> dst_stride{};
  std::size_t count = 0;
};

/// Boxes per launch: kernel parameters stay within the classic 4 KiB.
template <class T, std::size_t Rank>
inline constexpr std::size_t boxes_per_launch =
    std::clamp<std::size_t>((4000 - 16) / sizeof(strided_box<T, Rank>), 1, 32);

template <class T, std::size_t Rank>
struct box_batch {
  strided_box<T, Rank> box[boxes_per_launch<T, Rank>];
};

/// blockIdx.y picks the box; the blocks along x stride over its elements.
template <class T, std::size_t Rank>
__global__ void copy_boxes_kernel(box_batch<T, Rank> batch) {
  const strided_box<T, Rank>& b = batch.box[blockIdx.y];
  const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < b.count; i += step) {
    std::size_t rest = i;
    std::size_t from = 0;
    std::size_t to = 0;
    for (std::size_t d = Rank; d-- > 0;) {
      const std::size_t c = rest % b.extent[d];
      rest /= b.extent[d];
      from += c * b.src_stride[d];
      to += c * b.dst_stride[d];
    }
    b.dst[to] = b.src != nullptr ? b.src[from] : b.value;
  }
}

/// The box `extent` at src_start of a padded source (null: a fill) to dst_start of a padded target.
template <class T, std::size_t Rank>
strided_box<T, Rank> make_box(const T* src_base, const md_index<Rank>& src_padded, const md_index<Rank>& src_start,
                              T* dst_base, const md_index<Rank>& dst_padded, const md_index<Rank>& dst_start,
                              const md_index<Rank>& extent) {
  strided_box<T, Rank> b;
  b.src_stride = row_major_strides(src_padded);
  b.dst_stride = row_major_strides(dst_padded);
  b.src = src_base == nullptr ? nullptr : src_base + linear_offset(b.src_stride, src_start);
  b.dst = dst_base + linear_offset(b.dst_stride, dst_start);
  for (std::size_t d = 0; d < Rank; ++d) b.extent[d] = extent[d];
  b.count = product(extent);
  return b;
}

/// Enqueues every box on `stream` (the current device's), a few dozen per launch.
template <class T, std::size_t Rank>
void launch_boxes(std::span<const strided_box<T, Rank>> boxes, cudaStream_t stream, const char* what) {
  constexpr std::size_t per = boxes_per_launch<T, Rank>;
  for (std::size_t first = 0; first < boxes.size(); first += per) {
    const std::size_t n = std::min(per, boxes.size() - first);
    box_batch<T, Rank> batch{};
    std::size_t largest = 0;
    for (std::size_t k = 0; k < n; ++k) {
      batch.box[k] = boxes[first + k];
      largest = std::max(largest, boxes[first + k].count);
    }
    if (largest == 0) continue;
    constexpr unsigned threads = 256;
    const dim3 grid(std::min(blocks_for(largest, threads), 2048u), static_cast<unsigned>(n));
    copy_boxes_kernel<T, Rank><<<grid, threads, 0, stream>>>(batch);
    check_launch(what);
    observe_work(stream, what);
  }
}

// ---- per-point work over a region of a tile ----------------------------------------------------

/// A region in interior coordinates.
template <std::size_t Rank>
struct point_region {
  md_point<Rank> start{};
  md_point<Rank> extent{};
};

template <std::size_t Rank>
point_region<Rank> to_region(const md_box<Rank>& box) noexcept {
  point_region<Rank> r;
  for (std::size_t d = 0; d < Rank; ++d) {
    r.start[d] = box.start[d];
    r.extent[d] = box.extent[d];
  }
  return r;
}

/// op(i) for every interior index i of the region. x runs along the fastest dimension (so a
/// warp reads consecutive elements), y along the next, z over the rest; each strides its
/// range so any extent fits the grid limits.
template <std::size_t Rank, class Op>
__global__ void for_each_point_kernel(point_region<Rank> r, Op op) {
  if constexpr (Rank == 1) {
    const std::size_t step = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t x = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; x < r.extent[0]; x += step)
      op(md_point<1>{r.start[0] + x});
  } else {
    const std::size_t nx = r.extent[Rank - 1];
    const std::size_t ny = r.extent[Rank - 2];
    std::size_t outer = 1;
    for (std::size_t d = 0; d + 2 < Rank; ++d) outer *= r.extent[d];
    const std::size_t x = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (x >= nx) return;
    for (std::size_t z = blockIdx.z; z < outer; z += gridDim.z) {
      md_point<Rank> i{};
      if constexpr (Rank > 2) {
        // z's digits in the outer extents, the last from what is left with no division (a
        // 64-bit one per thread costs about as much as the point's loads; 3-D has none).
        std::size_t rest = z;
        for (std::size_t d = Rank - 3; d > 0; --d) {
          i[d] = r.start[d] + rest % r.extent[d];
          rest /= r.extent[d];
        }
        i[0] = r.start[0] + rest;
      }
      i[Rank - 1] = r.start[Rank - 1] + x;
      for (std::size_t y = static_cast<std::size_t>(blockIdx.y) * blockDim.y + threadIdx.y; y < ny;
           y += static_cast<std::size_t>(gridDim.y) * blockDim.y) {
        i[Rank - 2] = r.start[Rank - 2] + y;
        op(i);
      }
    }
  }
}

/// Enqueues op over the region on `stream` (the current device's); nothing for an empty region.
template <std::size_t Rank, class Op>
void launch_points(const md_box<Rank>& box, const Op& op, cudaStream_t stream, const char* what) {
  if (box.empty()) return;
  const point_region<Rank> r = to_region(box);
  if constexpr (Rank == 1) {
    constexpr unsigned threads = 256;
    for_each_point_kernel<Rank, Op><<<std::min(blocks_for(box.extent[0], threads), 65535u), threads, 0, stream>>>(r, op);
  } else {
    // 256 threads: 32 along x and 8 along y, fewer along a dimension the region is narrow in
    // (a boundary strip one point wide) and the rest along the other.
    const std::size_t wanted_y = std::bit_ceil(std::min<std::size_t>(box.extent[Rank - 2], 8));
    const auto bx = static_cast<unsigned>(std::min<std::size_t>(std::bit_ceil(box.extent[Rank - 1]), 256 / wanted_y));
    const dim3 block(bx, 256 / bx);
    std::size_t outer = 1;
    for (std::size_t d = 0; d + 2 < Rank; ++d) outer *= box.extent[d];
    const dim3 grid(blocks_for(box.extent[Rank - 1], block.x),
                    static_cast<unsigned>(std::min<std::size_t>((box.extent[Rank - 2] + block.y - 1) / block.y, 65535)),
                    static_cast<unsigned>(std::min<std::size_t>(outer, 65535)));
    for_each_point_kernel<Rank, Op><<<grid, block, 0, stream>>>(r, op);
  }
  check_launch(what);
  observe_work(stream, what);
}

/// A tile as kernels see it: the padded storage's first element, its strides and the halo
/// widths, so that interior index i sits at data[sum((i[d] + halo[d]) * stride[d])]. Tiles are
/// row-major (layout_right): the last stride is 1, and offset() uses it as the constant it is,
/// so that neighbours along the last dimension are immediate offsets of one address.
template <class T, std::size_t Rank>
struct tile_ref {
  T* data = nullptr;
  md_point<Rank> stride{};
  md_point<Rank> halo{};
  __host__ __device__ std::size_t offset(const md_point<Rank>& i) const {
    std::size_t o = i[Rank - 1] + halo[Rank - 1];
    for (std::size_t d = 0; d + 1 < Rank; ++d) o += (i[d] + halo[d]) * stride[d];
    return o;
  }
  __host__ __device__ T& operator()(const md_point<Rank>& i) const { return data[offset(i)]; }
};

}  // namespace multigpu::detail
