#pragma once
// What every step of the sort agrees on: the order keys are really sorted by (CUB's radix
// order for arithmetic keys under the default comparator, the caller's comparator otherwise;
// docs/sort.md) and no_values, the values of a sort of keys alone. Usable on the host too:
// the tests' references order by radix_less.

#include <cuda/std/bit>
#include <cuda/std/functional>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <type_traits>

namespace multigpu::detail {

/// The order CUB's radix sort puts keys in, as a comparator. Integers: `<`. Floating
/// point: -0.0 and +0.0 are equivalent, NaNs with the sign bit clear come after +inf and
/// NaNs with the sign bit set before -inf, NaNs ordered by their bits.
template <class K>
struct radix_less {
  __host__ __device__ static auto ordered(const K& x) {
    if constexpr (std::is_floating_point_v<K>) {
      using U = std::conditional_t<sizeof(K) == 4, std::uint32_t, std::uint64_t>;
      constexpr U sign = U(1) << (sizeof(U) * 8 - 1);
      U bits = cuda::std::bit_cast<U>(x);
      if (bits == sign) bits = 0;  // -0.0 sorts as +0.0
      return (bits & sign) ? U(~bits) : U(bits | sign);
    } else {
      return x;
    }
  }
  __host__ __device__ bool operator()(const K& a, const K& b) const { return ordered(a) < ordered(b); }
};

/// Keys CUB's radix sort orders like `<` (floats as radix_less says).
template <class K>
inline constexpr bool radix_key_v = (std::is_integral_v<K> && !std::is_same_v<K, bool>) ||
                                    std::is_same_v<K, float> || std::is_same_v<K, double>;

template <class K, class Comp>
inline constexpr bool default_less_v =
    std::is_same_v<Comp, cuda::std::less<>> || std::is_same_v<Comp, cuda::std::less<K>> ||
    std::is_same_v<Comp, std::less<>> || std::is_same_v<Comp, std::less<K>>;

/// Radix sort applies: arithmetic keys in ascending order.
template <class K, class Comp>
inline constexpr bool use_radix_v = radix_key_v<K> && default_less_v<K, Comp>;

/// The comparator the sort really orders by.
template <class K, class Comp>
using sort_order_t = std::conditional_t<use_radix_v<K, Comp>, radix_less<K>, Comp>;

template <class K, class Comp>
sort_order_t<K, Comp> sort_order(const Comp& comp) {
  if constexpr (use_radix_v<K, Comp>)
    return radix_less<K>{};
  else
    return comp;
}

/// Stands for "no values" in sort_by_key's machinery.
struct no_values {};

}  // namespace multigpu::detail
