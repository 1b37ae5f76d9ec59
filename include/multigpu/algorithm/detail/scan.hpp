#pragma once
// The steps behind inclusive_scan and exclusive_scan (algorithm/scan.hpp): the per-piece
// scans and the scan of a range through the scan collective. Contains device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/small_scan.hpp>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

namespace multigpu {
namespace detail {

/// Element i of a piece with the carry folded into element 0.
template <class T, class Op>
struct carry_in {
  const T* data;
  const T* carry;
  Op op;
  __host__ __device__ T operator()(std::size_t i) const {
    return i == 0 ? static_cast<T>(op(*carry, data[0])) : data[i];
  }
};

/// out[i] = carry op in[0] op ... op in[i], the carry read from device memory at run time.
/// CUB's inclusive scan with an initial value (what InclusiveScanInit dispatches to) accepts
/// a FutureValue through its dispatch layer; using it keeps the input a plain pointer. With
/// the carry folded in through an iterator instead (the fallback for other CUB versions),
/// the scan is about a tenth slower than the exclusive scan, whose input is a pointer
/// (docs/performance.md).
template <class T, class Op, class N>
cudaError_t inclusive_scan_with_carry(void* temp, std::size_t& bytes, const T* in, T* out, Op op, T* carry, N n,
                                      cudaStream_t stream) {
#if CUB_VERSION >= 300000 && CUB_VERSION < 400000
  using offset_t = cub::detail::choose_offset_t<N>;
  using init_t = cub::detail::InputValue<T>;
  using accum_t = ::cuda::std::__accumulator_t<Op, T, T>;
  return cub::DispatchScan<const T*, T*, Op, init_t, offset_t, accum_t, cub::ForceInclusive::Yes>::Dispatch(
      temp, bytes, in, out, op, init_t(cub::FutureValue<T>(carry)), static_cast<offset_t>(n), stream);
#else
  auto folded = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0), carry_in<T, Op>{in, carry, op});
  return cub::DeviceScan::InclusiveScan(temp, bytes, folded, out, op, n, stream);
#endif
}

template <bool Exclusive, class In, class Out, class Op>
void scan_range(const char* algorithm, In first, In last, Out out, Op op, const typename In::value_type* init) {
  using T = typename In::value_type;
  check_reduction_operator<T, T, Op>();
  using traits = partial_traits<T, Op>;
  using P = typename traits::partial;
  const nvtx_range range_mark(algorithm, static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = unpack_range(algorithm, first, last);
  if (count == 0) return;
  auto& out_vector = unpack_output(algorithm, out, count);
  range_ref<T> range(*v, begin, count);
  aligned_output<T> result(range, out_vector, out.index());
  const auto lifted_op = traits::lift(op);

  auto reduce_piece = [&](const piece_context& ctx, P* partial, bool first_piece, const T* in) {
    P start = (init != nullptr && first_piece) ? traits::wrap(*init) : traits::empty();
    reduce_one_piece<traits>(ctx, in, identity_transform{}, lifted_op, start, partial);
  };
  auto scan_piece = [&](const piece_context& ctx, const T* carry, const T* in, T* o) {
    // One launch instead of CUB's two (see small_scan.hpp); never compiled for elements too
    // large for its block's shared memory.
    if constexpr (small_scan_shape<T>::limit > 0) {
      if (ctx.count <= small_scan_shape<T>::limit) {
        small_scan<Exclusive>(in, o, ctx.count, op, carry, init, ctx.stream);
        return;
      }
    }
    // cub_call remembers CUB's temporary size per lambda type, and with and without a carry
    // are different CUB calls: each `scan` below is its own type, so each wrapper is too.
    auto scan_with = [&](const char* what, auto&& scan) {
      cub_call(*ctx.scratch, ctx.stream, what, ctx.count, [&](void* temp, std::size_t& bytes) {
        return with_count(ctx.count, [&](auto n) { return scan(temp, bytes, n); });
      });
    };
    if constexpr (Exclusive) {
      if (carry)
        scan_with("cub::DeviceScan::ExclusiveScan", [&](void* temp, std::size_t& bytes, auto n) {
          // FutureValue<T, T*> exactly: CUB's InputValue<T> accepts only that type, and any
          // other would convert to T on the host, reading device memory there.
          return cub::DeviceScan::ExclusiveScan(temp, bytes, in, o, op, cub::FutureValue<T>(const_cast<T*>(carry)), n,
                                                ctx.stream);
        });
      else
        scan_with("cub::DeviceScan::ExclusiveScan", [&](void* temp, std::size_t& bytes, auto n) {
          return cub::DeviceScan::ExclusiveScan(temp, bytes, in, o, op, *init, n, ctx.stream);
        });
    } else if (carry) {
      scan_with("cub::DeviceScan::InclusiveScan", [&](void* temp, std::size_t& bytes, auto n) {
        return inclusive_scan_with_carry(temp, bytes, in, o, op, const_cast<T*>(carry), n, ctx.stream);
      });
    } else if (init) {
      scan_with("cub::DeviceScan::InclusiveScanInit", [&](void* temp, std::size_t& bytes, auto n) {
        return cub::DeviceScan::InclusiveScanInit(temp, bytes, in, o, op, *init, n, ctx.stream);
      });
    } else {
      scan_with("cub::DeviceScan::InclusiveScan", [&](void* temp, std::size_t& bytes, auto n) {
        return cub::DeviceScan::InclusiveScan(temp, bytes, in, o, op, n, ctx.stream);
      });
    }
  };
  // One fingerprint holds both steps' statements: the init is stated once, with the scan step.
  scan_pieces<T, P>(range, lifted_op, replayable(reduce_piece, depends_on(), range),
                    replayable(scan_piece, depends_on(op, init ? std::optional<T>(*init) : std::nullopt), range, result));
  result.commit();
}

}  // namespace detail

}  // namespace multigpu
