#pragma once
// The host side of the sample sort (detail/sort.hpp): how each segment samples its sorted
// run, and how the samples become splitters. Pure host arithmetic, tested on the CPU.
//
// Every element is a (key, global index) pair, where the index of the element at position p
// of segment s's stably sorted run is offset(s) + p. Ordering by (key, index) is a total
// order in which equal keys keep their input order, and splitters are such pairs: so equal
// keys split between buckets like distinct keys, and all-equal input spreads evenly.

#include <cuda/std/bit>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

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

/// A key with its index in the global (key, index) order.
template <class K>
struct indexed_key {
  K key;
  std::size_t index;
};

/// (key, index) order under `order` on the keys.
template <class K, class Order>
bool comes_before(const indexed_key<K>& a, const indexed_key<K>& b, const Order& order) {
  return order(a.key, b.key) || (!order(b.key, a.key) && a.index < b.index);
}

/// Samples each segment contributes: enough that buckets stay within a few percent of n/k
/// (regular sampling misplaces a splitter by at most one sample spacing per segment).
inline std::size_t samples_per_segment(std::size_t slots) { return std::min<std::size_t>(64 * slots, 4096); }

/// Which positions of a sorted run of `size` elements (size > 0) are sampled: first,
/// first + stride, ..., count of them, all inside the run.
struct sampling {
  std::size_t first = 0;
  std::size_t stride = 1;
  std::size_t count = 0;
};
inline sampling regular_sampling(std::size_t size, std::size_t slots) {
  sampling s;
  s.stride = std::max<std::size_t>(1, size / samples_per_segment(slots));
  s.count = size / s.stride;
  s.first = s.stride / 2;
  return s;
}

/// One segment's samples: keys[j] is position plan.first + j * plan.stride of its sorted
/// run, which holds `size` elements and starts at global index `offset`.
template <class K>
struct segment_samples {
  std::vector<K> keys;
  sampling plan;
  std::size_t offset = 0;
  std::size_t size = 0;
};

/// k - 1 splitters, in (key, index) order, at the weighted quantiles j n / k of the samples
/// (each sample stands for size / count elements of its segment). Bucket d then holds the
/// elements from splitter d - 1 (included) to splitter d (excluded).
template <class K, class Order>
std::vector<indexed_key<K>> choose_splitters(const std::vector<segment_samples<K>>& segments, std::size_t n,
                                             std::size_t k, const Order& order) {
  struct weighted {
    indexed_key<K> at;
    double weight;
  };
  std::vector<weighted> all;
  for (const segment_samples<K>& s : segments) {
    if (s.keys.empty()) continue;
    const double weight = static_cast<double>(s.size) / static_cast<double>(s.keys.size());
    for (std::size_t j = 0; j < s.keys.size(); ++j)
      all.push_back({{s.keys[j], s.offset + s.plan.first + j * s.plan.stride}, weight});
  }
  std::sort(all.begin(), all.end(),
            [&](const weighted& a, const weighted& b) { return comes_before(a.at, b.at, order); });
  std::vector<indexed_key<K>> splitters;
  double seen = 0;
  std::size_t next = 1;
  for (const weighted& w : all) {
    seen += w.weight;
    while (next < k && seen >= static_cast<double>(n) * static_cast<double>(next) / static_cast<double>(k)) {
      splitters.push_back(w.at);
      ++next;
    }
  }
  while (next < k && !all.empty()) {  // rounding left the last quantiles out: past the end
    splitters.push_back({all.back().at.key, n});
    ++next;
  }
  return splitters;
}

}  // namespace multigpu::detail
