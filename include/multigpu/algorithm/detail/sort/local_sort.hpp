#pragma once
// The sort's first step: each segment sorts itself on its own device with CUB, radix sort for
// arithmetic keys in the default order and stable merge sort for any other comparator
// (detail/sort/order.hpp says which). Temporary storage comes from the slot's pool.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/sort/order.hpp>
#include <multigpu/memory/device_pool.hpp>

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace multigpu::detail {

/// Stably sorts n keys (and values) on the current device. Radix sort ping-pongs between
/// `keys` and `keys_alt` (same for values) and says where the result is; merge sort works
/// in place and needs no second buffer.
template <class K, class V, class Comp>
std::pair<K*, V*> sort_run(K* keys, K* keys_alt, V* values, V* values_alt, std::size_t n, const Comp& comp,
                           device_pool& pool, cudaStream_t stream) {
  constexpr bool with_values = !std::is_same_v<V, no_values>;
  if (n == 0) return {keys, values};
  if constexpr (use_radix_v<K, Comp>) {
    cub::DoubleBuffer<K> kb(keys, keys_alt);
    constexpr int bits = static_cast<int>(sizeof(K) * 8);
    if constexpr (with_values) {
      cub::DoubleBuffer<V> vb(values, values_alt);
      cub_call(pool, stream, "cub::DeviceRadixSort::SortPairs", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortPairs(temp, bytes, kb, vb, n, 0, bits, stream);
      });
      return {kb.Current(), vb.Current()};
    } else {
      cub_call(pool, stream, "cub::DeviceRadixSort::SortKeys", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceRadixSort::SortKeys(temp, bytes, kb, n, 0, bits, stream);
      });
      return {kb.Current(), values};
    }
  } else {
    if constexpr (with_values) {
      cub_call(pool, stream, "cub::DeviceMergeSort::StableSortPairs", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMergeSort::StableSortPairs(temp, bytes, keys, values, n, comp, stream);
      });
    } else {
      cub_call(pool, stream, "cub::DeviceMergeSort::StableSortKeys", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMergeSort::StableSortKeys(temp, bytes, keys, n, comp, stream);
      });
    }
    return {keys, values};
  }
}

}  // namespace multigpu::detail
