#pragma once
// The sort's merging: a receiver merges the sorted pieces meant for it pairwise, in sender
// order, with cub::DeviceMerge, then merges on to a single run. A merge takes the earlier
// run's key on ties, so equal keys stay in input order.

#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/sort/order.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/memory/device_pool.hpp>

#include <cub/device/device_merge.cuh>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu::detail {

/// One sorted piece of a sender's run, read where it lies (on this device or over a peer
/// link), with its values.
template <class K, class V>
struct run_piece {
  const K* keys;
  const V* values;
  std::size_t length;
};

/// One merge pass: merges the sorted pieces pairwise, in order, into `keys` (and `values`),
/// back to back, and copies an odd piece out as it is; returns the merged runs' lengths.
/// Among equivalent keys the earlier piece's come first: cub::DeviceMerge takes the first
/// range's element on ties (thrust::merge, which documents that stability, is built on it).
/// The pieces may lie anywhere the stream's device can load from: the first pass of a
/// receiver reads the senders' runs in place.
template <class K, class V, class Order>
std::vector<std::size_t> merge_pieces(const std::vector<run_piece<K, V>>& pieces, K* keys, V* values,
                                      const Order& order, device_pool& pool, cudaStream_t stream) {
  constexpr bool with_values = !std::is_same_v<V, no_values>;
  std::vector<std::size_t> lengths;
  std::size_t offset = 0;
  for (std::size_t i = 0; i < pieces.size(); i += 2) {
    const run_piece<K, V>& a = pieces[i];
    if (i + 1 == pieces.size()) {
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(keys + offset, a.keys, a.length * sizeof(K), cudaMemcpyDefault, stream));
      if constexpr (with_values)
        MULTIGPU_CUDA_TRY(
            cudaMemcpyAsync(values + offset, a.values, a.length * sizeof(V), cudaMemcpyDefault, stream));
      lengths.push_back(a.length);
      break;
    }
    const run_piece<K, V>& b = pieces[i + 1];
    const auto na = static_cast<std::int64_t>(a.length), nb = static_cast<std::int64_t>(b.length);
    if constexpr (with_values) {
      cub_call(pool, stream, "cub::DeviceMerge::MergePairs", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMerge::MergePairs(temp, bytes, a.keys, a.values, na, b.keys, b.values, nb, keys + offset,
                                            values + offset, order, stream);
      });
    } else {
      cub_call(pool, stream, "cub::DeviceMerge::MergeKeys", [&](void* temp, std::size_t& bytes) {
        return cub::DeviceMerge::MergeKeys(temp, bytes, a.keys, na, b.keys, nb, keys + offset, order, stream);
      });
    }
    lengths.push_back(a.length + b.length);
    offset += a.length + b.length;
  }
  return lengths;
}

/// Merges consecutive sorted runs of the given lengths (and their values) into one, in
/// ceil(log2 runs) passes of merge_pieces that ping-pong between the buffers and their
/// alternates; returns where the result lies. Earlier runs come first among equivalent keys.
template <class K, class V, class Order>
std::pair<K*, V*> merge_runs(K* keys, K* keys_alt, V* values, V* values_alt, std::vector<std::size_t> lengths,
                             const Order& order, device_pool& pool, cudaStream_t stream) {
  constexpr bool with_values = !std::is_same_v<V, no_values>;
  std::erase(lengths, std::size_t{0});
  K* from = keys;
  K* to = keys_alt;
  V* values_from = values;
  V* values_to = values_alt;
  while (lengths.size() > 1) {
    std::vector<run_piece<K, V>> pieces;
    std::size_t offset = 0;
    for (std::size_t length : lengths) {
      if constexpr (with_values)
        pieces.push_back({from + offset, values_from + offset, length});
      else
        pieces.push_back({from + offset, nullptr, length});
      offset += length;
    }
    lengths = merge_pieces(pieces, to, values_to, order, pool, stream);
    std::swap(from, to);
    std::swap(values_from, values_to);
  }
  return {from, values_from};
}

}  // namespace multigpu::detail
