#pragma once
// Checks of the user's operators at the user's call, before any CUB code is instantiated, so
// that a mistake gets one message that names the fix instead of pages of errors from inside
// CUB (docs/api.md#operators).

#include <type_traits>

// nvcc's traits for extended lambdas; other compilers see no extended lambdas.
#if defined(__CUDACC__) && defined(__NVCC__)
#define MULTIGPU_IS_DEVICE_ONLY_LAMBDA(T) __nv_is_extended_device_lambda_closure_type(T)
#else
#define MULTIGPU_IS_DEVICE_ONLY_LAMBDA(T) false
#endif

namespace multigpu::detail {

#if defined(__CUDACC__)
/// Never launched. Naming it with a host-only lambda's closure type makes nvcc's front end
/// report the lambda, the line it is defined at and the fix (__device__ or __host__
/// __device__), where otherwise the first errors come from nvcc's generated stub files.
template <class F>
__global__ void device_operator_probe(F) {}
#endif

/// An operator the devices call: a functor, or a __device__ or __host__ __device__ lambda.
template <class F>
constexpr void check_device_operator() {
#if defined(__CUDACC__)
  (void)&device_operator_probe<F>;
#endif
}

/// An operator that CUB calls on the device and queries for its result type on the host: a
/// `__device__`-only extended lambda will not do.
template <class Op>
constexpr void check_host_device_operator() {
  check_device_operator<Op>();
  static_assert(!MULTIGPU_IS_DEVICE_ONLY_LAMBDA(Op),
                "multigpu: reductions and scans need a __host__ __device__ operator (CUB asks for its result "
                "type on the host): write the lambda as [] __host__ __device__ (...) instead of [] __device__ (...)");
}

/// A reduction or scan operator: host and device, and it must take the accumulator and the
/// element.
template <class Acc, class T, class Op>
constexpr void check_reduction_operator() {
  check_host_device_operator<Op>();
  static_assert(std::is_invocable_v<const Op&, const Acc&, const T&>,
                "multigpu: the operator of this reduction or scan cannot be called with (accumulator, element): "
                "it must take the type of init and the vector's element type");
}

}  // namespace multigpu::detail
