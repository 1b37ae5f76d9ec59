#pragma once
// How partial results are represented. CUB's reductions take an initial value: the first
// piece gets the caller's init, the other pieces need an identity, which is known for common
// operators (0 for plus on arithmetic types, ...). For any other operator the partials are
// wrapped in `maybe<T>`, whose empty state is the identity of the wrapped operator. Operators
// are associative and never assumed commutative unless known or declared so.

#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda/std/type_traits>

#include <cstdint>
#include <functional>
#include <type_traits>

namespace multigpu::detail {

// ---- identities -------------------------------------------------------------------------

/// identity_of<Op, T>::value exists when Op has a known identity element for T.
template <class Op, class T, class = void>
struct identity_of {
  static constexpr bool known = false;
};
template <class T, class Plus>
inline constexpr bool is_plus_v = std::is_same_v<Plus, cuda::std::plus<>> || std::is_same_v<Plus, cuda::std::plus<T>> ||
                                  std::is_same_v<Plus, std::plus<>> || std::is_same_v<Plus, std::plus<T>>;
template <class T, class Times>
inline constexpr bool is_multiplies_v =
    std::is_same_v<Times, cuda::std::multiplies<>> || std::is_same_v<Times, cuda::std::multiplies<T>> ||
    std::is_same_v<Times, std::multiplies<>> || std::is_same_v<Times, std::multiplies<T>>;
template <class T, class Min>
inline constexpr bool is_minimum_v = std::is_same_v<Min, cuda::minimum<>> || std::is_same_v<Min, cuda::minimum<T>>;
template <class T, class Max>
inline constexpr bool is_maximum_v = std::is_same_v<Max, cuda::maximum<>> || std::is_same_v<Max, cuda::maximum<T>>;

template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_plus_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() { return T(0); }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_multiplies_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() { return T(1); }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_minimum_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() {
    return cuda::std::numeric_limits<T>::has_infinity ? cuda::std::numeric_limits<T>::infinity()
                                                      : cuda::std::numeric_limits<T>::max();
  }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_maximum_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() {
    return cuda::std::numeric_limits<T>::has_infinity ? -cuda::std::numeric_limits<T>::infinity()
                                                      : cuda::std::numeric_limits<T>::lowest();
  }
};

/// Operators known to be commutative: the ones with a known identity above, and any
/// operator wrapped with multigpu::commutative().
template <class Op>
struct commutative_op;
template <class Op, class T>
struct is_commutative : std::bool_constant<identity_of<Op, T>::known> {};
template <class Op, class T>
struct is_commutative<commutative_op<Op>, T> : std::true_type {};

// ---- maybe<T>: an identity for any operator -----------------------------------------------

/// The flag of maybe<T> is as wide as T's alignment, so that value and flag fill the struct
/// with no padding: kernels copy maybe<T> as whole words, and padding bytes nobody wrote would
/// be reads of uninitialised memory (compute-sanitizer's initcheck reports them).
template <std::size_t Alignment>
struct maybe_flag {
  using type = bool;  // alignments above 16: the padding stays
};
template <>
struct maybe_flag<2> {
  using type = std::uint16_t;
};
template <>
struct maybe_flag<4> {
  using type = std::uint32_t;
};
template <>
struct maybe_flag<8> {
  using type = std::uint64_t;
};
template <>
struct maybe_flag<16> {
  using type = unsigned __int128;
};

template <class T>
struct maybe {
  using flag = typename maybe_flag<alignof(T)>::type;
  T value;
  flag has;
  maybe() = default;
  __host__ __device__ maybe(const T& v) : value(v), has(1) {}
  __host__ __device__ maybe(const T& v, bool h) : value(v), has(h ? 1 : 0) {}
};

/// Op lifted to maybe<T>: the empty maybe is its identity.
template <class T, class Op>
struct maybe_op {
  Op op;
  __host__ __device__ maybe<T> operator()(const maybe<T>& a, const maybe<T>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return maybe<T>(static_cast<T>(op(a.value, b.value)), true);
  }
};

template <class T>
__host__ __device__ const T& unwrap(const T& v) {
  return v;
}
template <class T>
__host__ __device__ const T& unwrap(const maybe<T>& v) {
  return v.value;
}

/// How partials of T under Op are represented: P is T itself when Op's identity is known,
/// maybe<T> otherwise; `op` combines two partials and `init(x)` / `empty()` make partials.
template <class T, class Op>
struct partial_traits {
  static constexpr bool direct = identity_of<Op, T>::known;
  static constexpr bool commutative = is_commutative<Op, T>::value;
  using partial = std::conditional_t<direct, T, maybe<T>>;
  using partial_op = std::conditional_t<direct, Op, maybe_op<T, Op>>;
  static partial_op lift(const Op& op) {
    if constexpr (direct)
      return op;
    else
      return maybe_op<T, Op>{op};
  }
  static partial wrap(const T& v) { return partial(v); }
  static partial empty() {
    if constexpr (direct)
      return identity_of<Op, T>::value();
    else
      return maybe<T>(T{}, false);
  }
};

}  // namespace multigpu::detail

namespace multigpu {
namespace detail {
/// An operator declared commutative by its user: reductions may then use CUB's fastest
/// (reordering) path instead of the order-keeping one.
template <class Op>
struct commutative_op {
  Op op;
  template <class A, class B>
  __host__ __device__ auto operator()(const A& a, const B& b) const -> decltype(op(a, b)) {
    return op(a, b);
  }
};
}  // namespace detail

/// Declares a reduction operator commutative (and associative), e.g.
/// `mg::reduce(v, init, mg::commutative(my_op))`.
template <class Op>
detail::commutative_op<Op> commutative(Op op) {
  return {op};
}

}  // namespace multigpu
