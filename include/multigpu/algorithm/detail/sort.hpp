#pragma once
// Sample sort over the segments of a vector, keeping the vector's layout:
//   1. each segment sorts itself (CUB: radix sort for arithmetic keys in the default order,
//      stable merge sort for any other comparator);
//   2. each segment sends regularly spaced samples of its run to the host, which picks
//      k-1 splitters at weighted quantiles;
//   3. splitters are (key, global index) pairs, and so is every element: an element at
//      position p of segment s's sorted run has index offset(s) + p. Equal keys therefore
//      split between segments like any other keys (all-equal input is spread evenly);
//   4. every segment finds its bucket boundaries by binary search, the buckets are
//      exchanged all-to-all (detail/all_to_all.hpp), and each receiver merges the sorted
//      runs it received pairwise (they arrive in sender order and merging keeps earlier
//      runs first among equal keys, so equal keys stay in input order);
//   5. the sorted sequence, now laid out by bucket sizes, moves back into the vector's own
//      segment sizes (a second all-to-all).
// Every local sort is stable and the order of equal keys is the input order throughout, so
// the whole sort is stable.

#include <multigpu/algorithm/detail/all_to_all.hpp>
#include <multigpu/algorithm/detail/cub_call.hpp>
#include <multigpu/algorithm/detail/splitters.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>

#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace multigpu::detail {

/// Keys CUB's radix sort orders like `<` (floats as radix_less in detail/splitters.hpp says).
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

/// Merges consecutive sorted runs of the given lengths (and their values) into one, in
/// ceil(log2 runs) passes of pairwise merges that ping-pong between the buffers and their
/// alternates; returns where the result lies. Among equivalent keys, earlier runs come
/// first: cub::DeviceMerge takes the first range's element on ties (thrust::merge, which
/// documents that stability, is built on it).
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
    std::vector<std::size_t> merged;
    std::size_t offset = 0;
    for (std::size_t i = 0; i < lengths.size(); i += 2) {
      if (i + 1 == lengths.size()) {  // the odd run out moves over as it is
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(to + offset, from + offset, lengths[i] * sizeof(K),
                                          cudaMemcpyDeviceToDevice, stream));
        if constexpr (with_values)
          MULTIGPU_CUDA_TRY(cudaMemcpyAsync(values_to + offset, values_from + offset, lengths[i] * sizeof(V),
                                            cudaMemcpyDeviceToDevice, stream));
        merged.push_back(lengths[i]);
        break;
      }
      const auto a = static_cast<std::int64_t>(lengths[i]), b = static_cast<std::int64_t>(lengths[i + 1]);
      if constexpr (with_values) {
        cub_call(pool, stream, "cub::DeviceMerge::MergePairs", [&](void* temp, std::size_t& bytes) {
          return cub::DeviceMerge::MergePairs(temp, bytes, from + offset, values_from + offset, a, from + offset + a,
                                              values_from + offset + a, b, to + offset, values_to + offset, order,
                                              stream);
        });
      } else {
        cub_call(pool, stream, "cub::DeviceMerge::MergeKeys", [&](void* temp, std::size_t& bytes) {
          return cub::DeviceMerge::MergeKeys(temp, bytes, from + offset, a, from + offset + a, b, to + offset, order,
                                             stream);
        });
      }
      merged.push_back(lengths[i] + lengths[i + 1]);
      offset += lengths[i] + lengths[i + 1];
    }
    std::swap(from, to);
    std::swap(values_from, values_to);
    lengths = std::move(merged);
  }
  return {from, values_from};
}

/// out[j] = run[first + j * stride] for j < count.
template <class K>
__global__ void take_samples(const K* run, std::size_t first, std::size_t stride, std::size_t count, K* out) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < count) out[j] = run[first + j * stride];
}

/// bounds[j] = how many elements of the sorted run come before splitter j in (key, index)
/// order, where the element at position p has index first_index + p.
template <class K, class Order>
__global__ void bucket_bounds(const K* run, std::size_t n, std::size_t first_index, const K* splitter_keys,
                              const std::size_t* splitter_index, std::size_t splitters, Order order,
                              std::size_t* bounds) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= splitters) return;
  const K key = splitter_keys[j];
  const std::size_t index = splitter_index[j];
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const bool before = order(run[mid], key) || (!order(key, run[mid]) && first_index + mid < index);
    if (before)
      lo = mid + 1;
    else
      hi = mid;
  }
  bounds[j] = lo;
}

inline unsigned blocks_for(std::size_t n, unsigned threads) {
  return static_cast<unsigned>(std::max<std::size_t>(1, (n + threads - 1) / threads));
}

/// What a sort did, for tests of its balance: how many elements each slot received
/// (empty when the sort needed no exchange).
struct sort_stats {
  std::vector<std::size_t> bucket_sizes;
};

/// Sorts keys (and values, same group and layout as keys) by `comp`, stably.
template <class K, class V, class Comp>
void sort_in_layout(distributed_vector<K>& keys, distributed_vector<V>* values, const Comp& comp,
                    sort_stats* stats = nullptr) {
  constexpr bool with_values = !std::is_same_v<V, no_values>;
  constexpr bool radix = use_radix_v<K, Comp>;
  const device_group& group = keys.group();
  const std::size_t k = group.size();
  const std::size_t n = keys.size();
  if (n < 2) return;
  const auto order = sort_order<K>(comp);

  std::vector<std::size_t> sizes(k), offsets(k);
  std::vector<std::size_t> filled;
  for (std::size_t s = 0; s < k; ++s) {
    sizes[s] = keys.layout().segment_size(s);
    offsets[s] = keys.layout().segment_offset(s);
    if (sizes[s] > 0) filled.push_back(s);
  }
  auto key_data = [&](std::size_t s) { return keys.segment(s).data(); };
  auto value_data = [&](std::size_t s) {
    if constexpr (with_values)
      return values->segment(s).data();
    else
      return static_cast<no_values*>(nullptr);
  };

  // 1. Local sorts.
  std::vector<device_buffer<K>> key_alt(k);
  std::vector<device_buffer<V>> value_alt(k);
  std::vector<K*> run(k, nullptr);
  std::vector<V*> value_run(k, nullptr);
  for (std::size_t s : filled) {
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    if constexpr (radix) {
      key_alt[s] = device_buffer<K>(sizes[s], group.pool(s), stream);
      if constexpr (with_values) value_alt[s] = device_buffer<V>(sizes[s], group.pool(s), stream);
    }
    std::tie(run[s], value_run[s]) = sort_run(key_data(s), key_alt[s].data(), value_data(s), value_alt[s].data(),
                                              sizes[s], comp, group.pool(s), stream);
  }
  if (filled.size() == 1) {
    const std::size_t s = filled.front();
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    if (run[s] != key_data(s))
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(key_data(s), run[s], sizes[s] * sizeof(K), cudaMemcpyDeviceToDevice, stream));
    if constexpr (with_values)
      if (value_run[s] != value_data(s))
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(value_data(s), value_run[s], sizes[s] * sizeof(V),
                                          cudaMemcpyDeviceToDevice, stream));
    return;
  }

  // 2. Regular samples of every run, to the host; weighted quantiles become splitters.
  std::vector<segment_samples<K>> samples(k);
  {
    std::vector<device_buffer<K>> device_samples(k);
    for (std::size_t s : filled) {
      device_guard guard(group.device(s));
      cudaStream_t stream = group.stream(s);
      segment_samples<K>& set = samples[s];
      set.plan = regular_sampling(sizes[s], k);
      set.offset = offsets[s];
      set.size = sizes[s];
      const std::size_t count = set.plan.count;
      set.keys.resize(count);
      device_samples[s] = device_buffer<K>(count, group.pool(s), stream);
      take_samples<<<blocks_for(count, 256), 256, 0, stream>>>(run[s], set.plan.first, set.plan.stride, count,
                                                                device_samples[s].data());
      check_launch("take_samples");
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(set.keys.data(), device_samples[s].data(), count * sizeof(K),
                                        cudaMemcpyDeviceToHost, stream));
    }
    for (std::size_t s : filled) {
      device_guard guard(group.device(s));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(s)));
    }
  }
  std::vector<K> splitter_keys;
  std::vector<std::size_t> splitter_index;
  for (const indexed_key<K>& x : choose_splitters(samples, n, k, order)) {
    splitter_keys.push_back(x.key);
    splitter_index.push_back(x.index);
  }
  const std::size_t splitters = splitter_keys.size();  // k - 1

  // 3. Bucket boundaries of every run.
  exchange_plan plan(k);
  {
    std::vector<std::vector<std::size_t>> bounds(k, std::vector<std::size_t>(splitters));
    std::vector<device_buffer<K>> d_keys(k);
    std::vector<device_buffer<std::size_t>> d_index(k), d_bounds(k);
    for (std::size_t s : filled) {
      device_guard guard(group.device(s));
      cudaStream_t stream = group.stream(s);
      d_keys[s] = device_buffer<K>(splitters, group.pool(s), stream);
      d_index[s] = device_buffer<std::size_t>(splitters, group.pool(s), stream);
      d_bounds[s] = device_buffer<std::size_t>(splitters, group.pool(s), stream);
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(d_keys[s].data(), splitter_keys.data(), splitters * sizeof(K),
                                        cudaMemcpyHostToDevice, stream));
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(d_index[s].data(), splitter_index.data(), splitters * sizeof(std::size_t),
                                        cudaMemcpyHostToDevice, stream));
      bucket_bounds<<<blocks_for(splitters, 128), 128, 0, stream>>>(run[s], sizes[s], offsets[s], d_keys[s].data(),
                                                                     d_index[s].data(), splitters, order,
                                                                     d_bounds[s].data());
      check_launch("bucket_bounds");
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(bounds[s].data(), d_bounds[s].data(), splitters * sizeof(std::size_t),
                                        cudaMemcpyDeviceToHost, stream));
    }
    for (std::size_t s : filled) {
      device_guard guard(group.device(s));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(s)));
      std::size_t previous = 0;
      for (std::size_t d = 0; d < k; ++d) {
        const std::size_t end = d < splitters ? bounds[s][d] : sizes[s];
        plan.count(s, d) = end - previous;
        previous = end;
      }
    }
  }

  // 4. Exchange the buckets, then each receiver merges the runs it received.
  if (stats) {
    stats->bucket_sizes.resize(k);
    for (std::size_t d = 0; d < k; ++d) stats->bucket_sizes[d] = plan.received(d);
  }
  std::vector<device_buffer<K>> received(k), received_alt(k);
  std::vector<device_buffer<V>> received_values(k), received_values_alt(k);
  std::vector<K*> receive_keys(k, nullptr);
  std::vector<V*> receive_values(k, nullptr);
  std::vector<std::size_t> bucket_sizes(k);
  for (std::size_t d = 0; d < k; ++d) {
    bucket_sizes[d] = plan.received(d);
    if (bucket_sizes[d] == 0) continue;
    device_guard guard(group.device(d));
    received[d] = device_buffer<K>(bucket_sizes[d], group.pool(d), group.stream(d));
    receive_keys[d] = received[d].data();
    if constexpr (with_values) {
      received_values[d] = device_buffer<V>(bucket_sizes[d], group.pool(d), group.stream(d));
      receive_values[d] = received_values[d].data();
    }
  }
  all_to_all(group, plan, run, receive_keys);
  if constexpr (with_values) all_to_all(group, plan, value_run, receive_values);
  run.assign(k, nullptr);
  value_run.assign(k, nullptr);
  for (std::size_t s = 0; s < k; ++s) {  // released on their own streams, after the copies
    key_alt[s] = device_buffer<K>();
    value_alt[s] = device_buffer<V>();
  }
  for (std::size_t d = 0; d < k; ++d) {
    if (bucket_sizes[d] == 0) continue;
    device_guard guard(group.device(d));
    cudaStream_t stream = group.stream(d);
    std::vector<std::size_t> lengths(k);
    for (std::size_t s = 0; s < k; ++s) lengths[s] = plan.count(s, d);
    if (std::count_if(lengths.begin(), lengths.end(), [](std::size_t x) { return x > 0; }) > 1) {
      received_alt[d] = device_buffer<K>(bucket_sizes[d], group.pool(d), stream);
      if constexpr (with_values) received_values_alt[d] = device_buffer<V>(bucket_sizes[d], group.pool(d), stream);
    }
    std::tie(run[d], value_run[d]) = merge_runs(receive_keys[d], received_alt[d].data(), receive_values[d],
                                                received_values_alt[d].data(), std::move(lengths), order,
                                                group.pool(d), stream);
  }

  // 5. Back into the vector's own segment sizes.
  const exchange_plan back = exchange_plan::relayout(bucket_sizes, sizes);
  std::vector<K*> key_targets(k, nullptr);
  std::vector<V*> value_targets(k, nullptr);
  for (std::size_t s = 0; s < k; ++s) {
    if (sizes[s] == 0) continue;
    key_targets[s] = key_data(s);
    if constexpr (with_values) value_targets[s] = value_data(s);
  }
  all_to_all(group, back, run, key_targets);
  if constexpr (with_values) all_to_all(group, back, value_run, value_targets);
}

/// Checks keys and values, lines values up with the keys' layout if needed, and sorts.
template <class K, class V, class Comp>
void sort_by_key_impl(const char* algorithm, distributed_vector<K>& keys, distributed_vector<V>& values,
                      const Comp& comp) {
  MULTIGPU_EXPECTS(keys.group() == values.group(),
                   concat(algorithm, ": the keys are on a group of ", keys.group().size(),
                          " slots and the values on a different group of ", values.group().size(),
                          " slots; they must share one group"));
  MULTIGPU_EXPECTS(keys.size() == values.size(),
                   concat(algorithm, ": the keys have ", keys.size(), " elements but the values have ", values.size(),
                          "; they must be the same length"));
  MULTIGPU_EXPECTS(static_cast<const void*>(&keys) != static_cast<const void*>(&values),
                   concat(algorithm, ": the keys and the values must be different vectors"));
  if (keys.layout() == values.layout()) {
    sort_in_layout(keys, &values, comp);
    return;
  }
  distributed_vector<V> lined_up(keys.group(), keys.layout());
  lined_up.copy_range_from(values, 0, values.size(), 0);
  sort_in_layout(keys, &lined_up, comp);
  values.copy_range_from(lined_up, 0, values.size(), 0);
}

// ---- is_sorted, lower_bound, upper_bound -------------------------------------------------

/// *found = 1 when some x[i+1] comes before x[i].
template <class T, class Comp>
__global__ void find_descent(const T* x, std::size_t n, Comp comp, unsigned* found) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i + 1 < n; i += stride)
    if (comp(x[i + 1], x[i])) {
      atomicExch(found, 1u);
      return;
    }
}

/// *out = the first position p in the sorted x with !(x[p] < value) (lower) or
/// value < x[p] (upper).
template <class T, class Comp>
__global__ void bound_in_run(const T* x, std::size_t n, T value, Comp comp, bool upper, std::size_t* out) {
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const bool go_right = upper ? !comp(value, x[mid]) : comp(x[mid], value);
    if (go_right)
      lo = mid + 1;
    else
      hi = mid;
  }
  *out = lo;
}

template <class T, class Comp>
bool is_sorted_impl(const distributed_vector<T>& v, const Comp& comp) {
  const device_group& group = v.group();
  const std::size_t k = group.size();
  std::vector<std::size_t> filled;
  for (std::size_t s = 0; s < k; ++s)
    if (v.layout().segment_size(s) > 0) filled.push_back(s);
  std::vector<device_buffer<unsigned>> flags(k);
  std::vector<unsigned> found(k, 0);
  for (std::size_t s : filled) {
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    const std::size_t n = v.layout().segment_size(s);
    flags[s] = device_buffer<unsigned>(1, group.pool(s), stream);
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(flags[s].data(), 0, sizeof(unsigned), stream));
    if (n > 1) {
      find_descent<<<std::min(blocks_for(n, 256), 2048u), 256, 0, stream>>>(v.segment(s).data(), n, comp,
                                                                          flags[s].data());
      check_launch("find_descent");
    }
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(&found[s], flags[s].data(), sizeof(unsigned), cudaMemcpyDeviceToHost, stream));
  }
  bool sorted = true;
  for (std::size_t s : filled) {
    device_guard guard(group.device(s));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(s)));
    if (found[s]) sorted = false;
  }
  // Across segment boundaries: the last element of one segment against the first of the next.
  for (std::size_t i = 1; sorted && i < filled.size(); ++i) {
    const std::size_t last = v.layout().segment_offset(filled[i]) - 1;
    if (comp(v.read(last + 1), v.read(last))) sorted = false;
  }
  return sorted;
}

/// The position of lower_bound (upper = false) or upper_bound in a sorted vector: the sum
/// over segments of each segment's own bound.
template <class T, class Comp>
std::size_t bound_impl(const distributed_vector<T>& v, const T& value, const Comp& comp, bool upper) {
  const device_group& group = v.group();
  const std::size_t k = group.size();
  std::vector<device_buffer<std::size_t>> result(k);
  std::vector<std::size_t> local(k, 0);
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t n = v.layout().segment_size(s);
    if (n == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    result[s] = device_buffer<std::size_t>(1, group.pool(s), stream);
    bound_in_run<<<1, 1, 0, stream>>>(v.segment(s).data(), n, value, comp, upper, result[s].data());
    check_launch(upper ? "upper_bound" : "lower_bound");
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(&local[s], result[s].data(), sizeof(std::size_t), cudaMemcpyDeviceToHost,
                                      stream));
  }
  std::size_t position = 0;
  for (std::size_t s = 0; s < k; ++s) {
    if (v.layout().segment_size(s) == 0) continue;
    device_guard guard(group.device(s));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(s)));
    position += local[s];
  }
  return position;
}

}  // namespace multigpu::detail
