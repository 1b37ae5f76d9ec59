#pragma once
// Device functors the algorithms hand to CUB. Named types rather than lambdas: they carry
// no restrictions of extended lambdas and name themselves in profiles.

#include <cstddef>

namespace multigpu::detail {

template <class T>
struct fill_functor {
  T* out;
  T value;
  __device__ void operator()(std::size_t i) const { out[i] = value; }
};

/// out[i] = first + (offset + i), the value std::iota gives for integers; for floating
/// point it is computed directly, as thrust::sequence does, not by repeated increments.
template <class T>
struct iota_functor {
  T* out;
  T first;
  std::size_t offset;
  __device__ void operator()(std::size_t i) const { out[i] = static_cast<T>(first + static_cast<T>(offset + i)); }
};

/// x converted to U: reductions that accumulate in the type of their initial value
/// (reduce(ints, 0LL), as std::reduce) read each element as U.
template <class U>
struct convert_to {
  template <class X>
  __host__ __device__ U operator()(const X& x) const {
    return static_cast<U>(x);
  }
};

/// f(a[i], b[i]) for a counting-iterator input: a binary transform as a unary one.
template <class A, class B, class F>
struct zip_apply {
  const A* a;
  const B* b;
  F f;
  template <class I>
  __host__ __device__ auto operator()(I i) const -> decltype(f(a[i], b[i])) {
    return f(a[i], b[i]);
  }
};

/// 1 where pred(x) holds, else 0: counting as a sum.
template <class Pred>
struct count_functor {
  Pred pred;
  template <class X>
  __host__ __device__ std::size_t operator()(const X& x) const {
    return pred(x) ? 1 : 0;
  }
};

template <class T>
struct equal_to_value {
  T value;
  __host__ __device__ bool operator()(const T& x) const { return x == value; }
};

/// 1 where a and b differ: `equal` counts mismatches.
struct mismatch_functor {
  template <class X, class Y>
  __host__ __device__ std::size_t operator()(const X& x, const Y& y) const {
    return x == y ? 0 : 1;
  }
};

}  // namespace multigpu::detail
