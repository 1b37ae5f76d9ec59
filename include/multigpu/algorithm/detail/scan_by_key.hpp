#pragma once
// The steps behind inclusive_scan_by_key (algorithm/scan_by_key.hpp): where each piece's
// first run ends, and the kernel that folds a carry into it. Contains device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

namespace multigpu {
namespace detail {

/// j when the key changes at j (j > 0), else n: the minimum over a piece is the length of its
/// leading run.
template <class K, class Eq>
struct key_change_at {
  const K* keys;
  std::uint64_t n;
  Eq eq;
  __host__ __device__ std::uint64_t operator()(std::uint64_t j) const {
    return j > 0 && !static_cast<bool>(eq(keys[j - 1], keys[j])) ? j : n;
  }
};

/// out[j] = op(carry, out[j]) for j < n: the carry of the run that continues into a piece.
template <class V, class Op>
__global__ void fold_carry_into_run(V* out, std::size_t n, V carry, Op op) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; j < n; j += stride)
    out[j] = static_cast<V>(op(carry, out[j]));
}

}  // namespace detail

}  // namespace multigpu
