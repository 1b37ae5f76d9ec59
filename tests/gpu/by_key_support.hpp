#pragma once
// Shared by the reduce_by_key and inclusive_scan_by_key tests: keys in runs of a given length
// and values whose sums are exact.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <cstddef>
#include <type_traits>
#include <vector>

namespace test {

/// Keys of the given run length (0: every key its own run), cycling through 50 values so that
/// equal keys also appear in runs that are not adjacent.
inline std::vector<int> run_keys(std::size_t n, std::size_t length) {
  std::vector<int> keys(n);
  for (std::size_t i = 0; i < n; ++i) keys[i] = static_cast<int>(length == 0 ? i : (i / length) % 50);
  return keys;
}

/// Value i: affine maps for the non-commutative operator, halves for floating point (exact
/// sums), small signed integers otherwise.
template <class V>
V value_at(std::size_t i) {
  if constexpr (std::is_same_v<V, affine>)
    return {1 + (i * 7) % 13, (i * 31) % 101};
  else if constexpr (std::is_floating_point_v<V>)
    return static_cast<V>(static_cast<int>(i % 17) - 8) * V(0.5);
  else
    return static_cast<V>(static_cast<long long>(i % 1001) - 500);
}

/// value_at(0), ..., value_at(n - 1).
template <class V>
std::vector<V> values_at(std::size_t n) {
  std::vector<V> values(n);
  for (std::size_t i = 0; i < n; ++i) values[i] = value_at<V>(i);
  return values;
}

}  // namespace test
