#pragma once
// Element types, device functions and host references of the randomized differential test.
// Integers wrap like the hardware does (arithmetic in the unsigned type), so the host
// reference is exact in any order; floating-point results are compared within tolerances
// derived from n, against sums taken in long double.

#include "stress_plan.hpp"

#include <multigpu/multigpu.hpp>

#include <cuda/functional>
#include <cuda/std/functional>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <ostream>
#include <random>
#include <sstream>
#include <type_traits>

namespace stress {

/// The user struct: an exact 64-bit counter, a floating-point value and a tag, 24 bytes with
/// no padding (so sanitizers see every byte written), filled by the byte-pattern kernel.
struct record {
  long long count;
  double value;
  long long tag;
  __host__ __device__ friend bool operator==(const record& a, const record& b) {
    return a.count == b.count && a.value == b.value && a.tag == b.tag;
  }
};
static_assert(sizeof(record) == 24);

inline std::ostream& operator<<(std::ostream& out, const record& r) {
  return out << "{" << r.count << ", " << std::setprecision(17) << r.value << ", " << r.tag << "}";
}

template <class T>
inline constexpr bool inexact = std::is_floating_point_v<T> || std::is_same_v<T, record>;

// ---- wrapping integer arithmetic ---------------------------------------------------------

template <class I>
__host__ __device__ I wrap_add(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) + static_cast<U>(b));
}
template <class I>
__host__ __device__ I wrap_mul(I a, I b) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(static_cast<U>(a) * static_cast<U>(b));
}
template <class I>
__host__ __device__ I wrap_neg(I a) {
  using U = std::make_unsigned_t<I>;
  return static_cast<I>(U(0) - static_cast<U>(a));
}

// ---- the element functions -----------------------------------------------------------------
// Floating-point multipliers are powers of two, so a fused multiply-add on the device
// rounds exactly as the host's multiply then add.

template <class T>
__host__ __device__ T add(const T& a, const T& b) {
  if constexpr (std::is_integral_v<T>)
    return wrap_add(a, b);
  else if constexpr (std::is_floating_point_v<T>)
    return a + b;
  else
    return T{wrap_add(a.count, b.count), a.value + b.value, a.tag ^ b.tag};
}

template <class T>
__host__ __device__ T affine(const T& x) {
  if constexpr (std::is_integral_v<T>)
    return wrap_add(wrap_mul(x, T(3)), T(1));
  else if constexpr (std::is_floating_point_v<T>)
    return x * T(0.5) + T(0.25);
  else
    return T{affine(x.count), affine(x.value), x.tag ^ 0x5a5a5a5a5a5all};
}

template <class T>
__host__ __device__ T negate(const T& x) {
  if constexpr (std::is_integral_v<T>)
    return wrap_neg(x);
  else if constexpr (std::is_floating_point_v<T>)
    return -x;
  else
    return T{wrap_neg(x.count), -x.value, ~x.tag};
}

template <class T>
__host__ __device__ T bit_mix(const T& x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(x ^ (x >> 3));
  else if constexpr (std::is_floating_point_v<T>)
    return (x < T(0) ? -x : x) - T(0.5);
  else
    return T{bit_mix(x.count), bit_mix(x.value), wrap_add(x.tag, 1ll)};
}

template <class T>
__host__ __device__ T minus_twice(const T& a, const T& b) {
  if constexpr (std::is_integral_v<T>)
    return wrap_add(a, wrap_neg(wrap_mul(b, T(2))));
  else if constexpr (std::is_floating_point_v<T>)
    return a - T(2) * b;
  else
    return T{minus_twice(a.count, b.count), minus_twice(a.value, b.value), wrap_add(a.tag, wrap_neg(b.tag & 0xffff))};
}

template <class T>
__host__ __device__ T larger(const T& a, const T& b) {
  if constexpr (std::is_arithmetic_v<T>)
    return a < b ? b : a;
  else
    return a.count < b.count ? b : a;
}

template <int Fn>
struct unary_fn {
  template <class T>
  __host__ __device__ T operator()(const T& x) const {
    if constexpr (Fn == 0)
      return affine(x);
    else if constexpr (Fn == 1)
      return negate(x);
    else
      return bit_mix(x);
  }
};

template <int Fn>
struct binary_fn {
  template <class T>
  __host__ __device__ T operator()(const T& a, const T& b) const {
    if constexpr (Fn == 0)
      return add(a, b);
    else if constexpr (Fn == 1)
      return minus_twice(a, b);
    else
      return larger(a, b);
  }
};

/// Multiplies the floating-point part by a power of two (exact): keeps magnitudes bounded
/// over long sequences of scans.
struct scale_by {
  double factor;
  template <class T>
  __host__ __device__ T operator()(const T& x) const {
    if constexpr (std::is_floating_point_v<T>)
      return x * static_cast<T>(factor);
    else
      return T{x.count, x.value * factor, x.tag};
  }
};

/// A sum the library does not know: no identity, so the order-keeping path with maybe<T>
/// partials.
struct plus_unknown {
  template <class T>
  __host__ __device__ T operator()(const T& a, const T& b) const {
    return add(a, b);
  }
};

/// (a, b) -> b: associative, not commutative. A reduction gives the last element and an
/// inclusive scan the input itself; any reordering shows.
struct take_right {
  template <class T>
  __host__ __device__ T operator()(const T&, const T& b) const {
    return b;
  }
};

// ---- calling the right functor for an operation ------------------------------------------------

template <class F>
auto with_unary(int fn, F&& f) {
  if (fn == 0) return f(unary_fn<0>{});
  if (fn == 1) return f(unary_fn<1>{});
  return f(unary_fn<2>{});
}

template <class F>
auto with_binary(int fn, F&& f) {
  if (fn == 0) return f(binary_fn<0>{});
  if (fn == 1) return f(binary_fn<1>{});
  return f(binary_fn<2>{});
}

template <class T, class F>
auto with_reduce_op(binary_op op, F&& f) {
  switch (op) {
    case binary_op::sum:
      if constexpr (std::is_arithmetic_v<T>) return f(cuda::std::plus<>{});
      break;
    case binary_op::sum_unknown: return f(plus_unknown{});
    case binary_op::sum_commutative: return f(multigpu::commutative(plus_unknown{}));
    case binary_op::maximum:
      if constexpr (std::is_arithmetic_v<T>) return f(cuda::maximum<>{});
      break;
    case binary_op::take_right: return f(take_right{});
  }
  throw std::logic_error("stress: operator not drawn for this element type");
}

/// Scans take the same operators but the commutative declaration, which only reductions
/// use (fewer instantiations to compile).
template <class T, class F>
auto with_scan_op(binary_op op, F&& f) {
  switch (op) {
    case binary_op::sum:
      if constexpr (std::is_arithmetic_v<T>) return f(cuda::std::plus<>{});
      break;
    case binary_op::sum_unknown: return f(plus_unknown{});
    case binary_op::maximum:
      if constexpr (std::is_arithmetic_v<T>) return f(cuda::maximum<>{});
      break;
    case binary_op::take_right: return f(take_right{});
    case binary_op::sum_commutative: break;
  }
  throw std::logic_error("stress: scan operator not drawn for this element type");
}

inline bool is_sum(binary_op op) {
  return op == binary_op::sum || op == binary_op::sum_unknown || op == binary_op::sum_commutative;
}

/// The host meaning of a non-sum operator (sums go through precise_sum).
template <class T>
T host_apply(binary_op op, const T& a, const T& b) {
  if (op == binary_op::maximum) {
    if constexpr (std::is_arithmetic_v<T>) return a < b ? b : a;
  }
  if (op == binary_op::take_right) return b;
  return add(a, b);
}

// ---- host references and tolerances ------------------------------------------------------

template <class T>
constexpr double epsilon() {
  if constexpr (std::is_same_v<T, float>)
    return std::numeric_limits<float>::epsilon();
  else if constexpr (inexact<T>)
    return std::numeric_limits<double>::epsilon();
  else
    return 0;
}

/// |x| of the floating-point part.
template <class T>
double magnitude(const T& x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::abs(static_cast<double>(x));
  else if constexpr (std::is_same_v<T, record>)
    return std::abs(x.value);
  else
    return 0;
}

/// A sum of n terms whose magnitudes add up to `scale`, in any order: blocked and tree
/// orders stay within about (items per thread + tiles + log n) roundings; allow
/// 4 sqrt(n) + 64 of them (as the algorithm tests do).
template <class T>
double tolerance(std::size_t n, double scale) {
  return epsilon<T>() * (std::sqrt(static_cast<double>(n)) * 4 + 64) * scale;
}

/// A few roundings of an element-wise result.
template <class T>
double elementwise_tolerance(const T& want) {
  return 4 * epsilon<T>() * magnitude(want);
}

/// The sum of a sequence: exact (wrapping) for the integer parts, long double for the
/// floating-point parts, with the sum of magnitudes for the error bound.
template <class T>
struct precise_sum {
  T exact{};
  long double wide = 0;
  double scale = 0;

  explicit precise_sum(const T& start) { add(start); }
  void add(const T& x) {
    if constexpr (std::is_integral_v<T>) {
      exact = stress::add(exact, x);
    } else if constexpr (std::is_floating_point_v<T>) {
      wide += x;
    } else {
      exact.count = wrap_add(exact.count, x.count);
      exact.tag ^= x.tag;
      wide += x.value;
    }
    scale += magnitude(x);
  }
  T value() const {
    if constexpr (std::is_integral_v<T>)
      return exact;
    else if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(wide);
    else
      return T{exact.count, static_cast<double>(wide), exact.tag};
  }
};

template <class T>
bool close(const T& got, const T& want, double tol) {
  if constexpr (std::is_integral_v<T>) {
    return got == want;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (got == want) return true;
    if (std::isnan(got) && std::isnan(want)) return true;
    return std::abs(static_cast<double>(got) - static_cast<double>(want)) <= tol;
  } else {
    return got.count == want.count && got.tag == want.tag && close(got.value, want.value, tol);
  }
}

template <class T>
std::string show(const T& x) {
  std::ostringstream out;
  if constexpr (std::is_floating_point_v<T>)
    out << std::setprecision(std::numeric_limits<T>::max_digits10) << x;
  else
    out << x;
  return out.str();
}

// ---- random data -------------------------------------------------------------------------

template <class T>
T random_value(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(-1, 1);
  if constexpr (std::is_integral_v<T>) {
    if (rng() % 2) return static_cast<T>(static_cast<long long>(rng() % 2001) - 1000);
    return static_cast<T>(rng());  // any bit pattern
  } else if constexpr (std::is_floating_point_v<T>) {
    if (rng() % 20 == 0) return T(0);
    return static_cast<T>(unit(rng));
  } else {
    const long long count = random_value<long long>(rng);
    return T{count, unit(rng), static_cast<long long>(rng())};
  }
}

template <class T>
std::vector<T> random_data(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = random_value<T>(rng);
  return v;
}

}  // namespace stress
