#pragma once
// Sample sort over the segments of a vector, keeping the vector's layout:
//   1. each segment sorts itself (CUB: radix sort for arithmetic keys in the default order,
//      stable merge sort for any other comparator);
//   2. every element is a (key, global index) pair: the element at position p of segment
//      s's sorted run has index offset(s) + p, a total order in which equal keys keep their
//      input order. The runs are split exactly at the segment offsets (detail/sort/splitters.hpp:
//      a few rounds of candidates, each round one wait of the host, the candidates and
//      counts in pinned mapped host memory), so slot d receives exactly its own segment's
//      size, whatever the keys (all equal included);
//   3. each receiver merges the pieces meant for it pairwise, in sender order, reading them
//      where they lie when it can (same device, or a peer link it may load through with
//      the segments in the group's own pools); the other groups (host-staged ones, user
//      resources across devices) exchange the pieces all-to-all first (detail/collective/all_to_all.hpp);
//   4. each receiver merges on to a single run (merging keeps earlier runs first among equal
//      keys, so equal keys stay in input order), into its own segment. No second exchange is
//      needed.
// Every local sort is stable and the order of equal keys is the input order throughout, so
// the whole sort is stable.

#include <multigpu/algorithm/detail/collective/all_to_all.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/algorithm/detail/collective/join.hpp>
#include <multigpu/algorithm/detail/sort/splitters.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/group_state.hpp>

#include <cub/device/device_merge.cuh>
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/util_type.cuh>
#include <cuda/std/functional>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <type_traits>
#include <vector>

namespace multigpu::detail {

/// Keys CUB's radix sort orders like `<` (floats as radix_less in detail/sort/splitters.hpp says).
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

/// The candidates of one round of the split search: keys[j] = run[positions[j]] and
/// index[j] = first_index + positions[j] (its global index), for j < count.
template <class K>
__global__ void offer_candidates(const K* run, const std::size_t* positions, std::size_t count,
                                 std::size_t first_index, K* keys, std::size_t* index) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= count) return;
  keys[j] = run[positions[j]];
  index[j] = first_index + positions[j];
}

/// before[j] = how many elements of the sorted run come before (keys[j], index[j]) in
/// (key, index) order, where the element at position p has index first_index + p.
template <class K, class Order>
__global__ void count_before(const K* run, std::size_t n, std::size_t first_index, const K* keys,
                             const std::size_t* index, std::size_t count, Order order, std::size_t* before) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j >= count) return;
  const K key = keys[j];
  const std::size_t at = index[j];
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    const bool earlier = order(run[mid], key) || (!order(key, run[mid]) && first_index + mid < at);
    if (earlier)
      lo = mid + 1;
    else
      hi = mid;
  }
  before[j] = lo;
}

inline unsigned blocks_for(std::size_t n, unsigned threads) {
  return static_cast<unsigned>(std::max<std::size_t>(1, (n + threads - 1) / threads));
}

/// What a sort did, for tests of its balance and its search: how many elements each slot
/// received (empty when the sort needed no exchange), how many rounds the exact splitting
/// took, and whether the receivers merged straight from the senders' runs.
struct sort_stats {
  std::vector<std::size_t> bucket_sizes;
  std::size_t split_rounds = 0;
  bool merged_in_place = false;
};

/// Marks, when it goes out of scope (normally or by an exception), everything enqueued on
/// the given slots' streams as a use of a staging lease, so that the block is not reused
/// before the kernels that read or write it are done.
class lease_fences {
 public:
  lease_fences(const device_group& group, staging_pool::lease& lease, const std::vector<std::size_t>& slots)
      : group_(group), lease_(lease), slots_(slots) {}
  lease_fences(const lease_fences&) = delete;
  lease_fences& operator=(const lease_fences&) = delete;
  ~lease_fences() {
    for (std::size_t s : slots_) {
      try {
        quiet_device_guard guard(group_.device(s));
        lease_.fence(group_.device(s), group_.stream(s));
      } catch (...) {  // nothing more can be ordered; the error that brought us here is reported
      }
    }
  }

 private:
  const device_group& group_;
  staging_pool::lease& lease_;
  const std::vector<std::size_t>& slots_;
};

/// Rounds up to a multiple of 256 bytes, the alignment of every region of a staging block.
inline std::size_t aligned_bytes(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

/// Splits the sorted runs (run[s] holds sizes[s] elements on slot s) exactly at the segment
/// offsets: plan.count(s, d) elements of run s go to slot d, and slot d receives exactly
/// sizes[d] elements. Each round of the search (detail/sort/splitters.hpp) costs one wait of the
/// host: the positions, the candidates and the counts all live in one block of pinned,
/// mapped host memory that the kernels read and write in place. Every slot takes its
/// candidates from its run; every slot waits for the others' candidates (events, no host)
/// and counts, in its run, the elements before each; the host waits for the counts.
template <class K, class Order>
exchange_plan split_exactly(const device_group& group, const std::vector<K*>& run,
                            const std::vector<std::size_t>& sizes, const std::vector<std::size_t>& offsets,
                            const Order& order, std::size_t* rounds) {
  group_state& g = state_of(group);
  const std::size_t k = group.size();
  std::vector<std::size_t> targets(offsets.begin() + 1, offsets.end());
  std::vector<std::size_t> filled;
  for (std::size_t s = 0; s < k; ++s)
    if (sizes[s] > 0) filled.push_back(s);
  // A window never exceeds its run, so no run offers more than its size per target.
  const std::size_t largest = *std::max_element(sizes.begin(), sizes.end());
  const std::size_t per_run = std::max<std::size_t>(2, std::min(candidates_per_run(k), largest));
  exact_splitting search(sizes, targets, per_run);
  // The largest round: every run offers per_run positions for every target.
  const std::size_t offered_most = (k - 1) * per_run;
  const std::size_t most = k * offered_most;
  const std::size_t positions_at = 0;
  const std::size_t index_at = positions_at + aligned_bytes(most * sizeof(std::size_t));
  const std::size_t keys_at = index_at + aligned_bytes(most * sizeof(std::size_t));
  const std::size_t before_at = keys_at + aligned_bytes(most * sizeof(K));
  const std::size_t bytes = before_at + k * most * sizeof(std::size_t);
  staging_pool::lease host = g.staging().acquire(bytes);
  lease_fences fences(group, host, filled);
  host.order_before_host();  // the host writes the positions: earlier users must be done
  auto* block = static_cast<std::byte*>(host.data());
  auto* positions = reinterpret_cast<std::size_t*>(block + positions_at);
  auto* index = reinterpret_cast<std::size_t*>(block + index_at);
  auto* keys = reinterpret_cast<K*>(block + keys_at);
  auto* counted = reinterpret_cast<std::size_t*>(block + before_at);
  // An empty run counts nothing before any candidate; the filled slots' rows are written by
  // their counting kernels, and the search reads the table where it lies.
  for (std::size_t s = 0; s < k; ++s)
    if (sizes[s] == 0) std::fill(counted + s * most, counted + (s + 1) * most, std::size_t{0});

  std::vector<std::size_t> first(k);
  while (!search.done()) {
    search.plan_round();
    std::size_t count = 0;
    for (std::size_t s = 0; s < k; ++s) {
      const std::vector<std::size_t>& p = search.positions(s);
      first[s] = count;
      count += p.size();
      std::copy(p.begin(), p.end(), positions + s * offered_most);
    }
    // Each slot's candidates, from its run.
    for (std::size_t s = 0; s < k; ++s) {
      const std::size_t m = search.positions(s).size();
      if (m == 0) continue;
      device_guard guard(group.device(s));
      cudaStream_t stream = group.stream(s);
      offer_candidates<<<blocks_for(m, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
          run[s], positions + s * offered_most, m, offsets[s], keys + first[s], index + first[s]);
      check_launch("offer_candidates");
    }
    // Every slot counts, in its run, the elements before every candidate, once every
    // slot's candidates are in.
    join_streams(group, filled);
    for (std::size_t d : filled) {
      device_guard guard(group.device(d));
      cudaStream_t stream = group.stream(d);
      count_before<<<blocks_for(count, tuning::search_threads), tuning::search_threads, 0, stream>>>(
          run[d], sizes[d], offsets[d], keys, index, count, order, counted + d * most);
      check_launch("count_before");
    }
    for (std::size_t d : filled) {
      device_guard guard(group.device(d));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(d)));
    }
    search.absorb(counted, most);
  }
  if (rounds) *rounds = search.rounds();
  const std::vector<std::vector<std::size_t>> splits = search.checked_splits();
  exchange_plan plan(k);
  for (std::size_t s = 0; s < k; ++s) {
    std::size_t previous = 0;
    for (std::size_t d = 0; d < k; ++d) {
      const std::size_t end = d + 1 < k ? splits[d][s] : sizes[s];
      plan.count(s, d) = end - previous;
      previous = end;
    }
  }
  return plan;
}

/// True when every receiver of the exchange can read its pieces where they lie: the sender
/// is on the receiver's device, or the receiver may load from the sender's device over a
/// peer link and the memory is the group's own pools, which the group granted to its
/// peers (a user's resources were granted nothing, and managed pages would migrate back
/// and forth). A group with peer_policy::host_staged never does.
inline bool reads_in_place(const device_group& group, const exchange_plan& plan) {
  const group_options& options = group.options();
  const bool granted = options.resources.empty() && options.storage == storage::pooled;
  for (std::size_t s = 0; s < plan.slots(); ++s)
    for (std::size_t d = 0; d < plan.slots(); ++d) {
      if (s == d || plan.count(s, d) == 0) continue;
      const copy_route r = group.route_between(s, d);
      const bool pulls = r.kind == route::peer && r.issued_by_destination && granted;
      if (r.kind != route::same_device && !pulls) return false;
    }
  return true;
}

/// Sorts keys (and values, same group and layout as keys) by `comp`, stably. Each slot
/// holds one spare buffer the size of its segment (and one for its values): the local
/// radix sort's second buffer, then the buffer the slot receives its share into, then the
/// merge's second buffer. So the extra memory is about the data plus CUB's scratch.
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
  const bool exchange = filled.size() > 1;

  // 1. Local sorts. run[s] is where slot s's sorted run lies: its segment or its spare.
  std::vector<device_buffer<K>> spare(k);
  std::vector<device_buffer<V>> value_spare(k);
  std::vector<K*> run(k, nullptr);
  std::vector<V*> value_run(k, nullptr);
  auto allocate_spare = [&](std::size_t s, cudaStream_t stream) {
    spare[s] = device_buffer<K>(sizes[s], group.pool(s), stream);
    if constexpr (with_values) value_spare[s] = device_buffer<V>(sizes[s], group.pool(s), stream);
  };
  for (std::size_t s : filled) {
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    // Radix sort needs the spare as its second buffer. Merge sort has scratch of its own
    // about the data's size: the spare comes after it, so the pool can reuse that memory.
    if (radix) allocate_spare(s, stream);
    std::tie(run[s], value_run[s]) =
        sort_run(key_data(s), spare[s].data(), value_data(s), value_spare[s].data(), sizes[s], comp, group.pool(s),
                 stream);
    if (!radix && exchange) allocate_spare(s, stream);
  }
  // The other buffer of each slot: free once the slot's run has been sent.
  auto other = [](auto* in, auto* a, auto* b) { return in == a ? b : a; };
  auto settle_into_segment = [&](std::size_t s) {
    cudaStream_t stream = group.stream(s);
    if (run[s] != key_data(s))
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(key_data(s), run[s], sizes[s] * sizeof(K), cudaMemcpyDeviceToDevice, stream));
    if constexpr (with_values)
      if (value_run[s] != value_data(s))
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(value_data(s), value_run[s], sizes[s] * sizeof(V),
                                          cudaMemcpyDeviceToDevice, stream));
  };
  if (!exchange) {
    const std::size_t s = filled.front();
    device_guard guard(group.device(s));
    settle_into_segment(s);
    return;
  }

  // 2. Split every run exactly at the segment offsets, so each slot receives its own size.
  std::size_t rounds = 0;
  const exchange_plan plan = split_exactly(group, run, sizes, offsets, order, &rounds);
  if (stats) {
    stats->bucket_sizes.resize(k);
    for (std::size_t d = 0; d < k; ++d) stats->bucket_sizes[d] = plan.received(d);
    stats->split_rounds = rounds;
  }

  // 3. Each slot gathers its share into the buffer that does not hold its own run. A slot
  //    that can read every sender's run where it lies (on its own device, or over a peer
  //    link it may load through) merges the pieces pairwise straight from there as its
  //    first merge pass, with no exchange; otherwise the pieces are exchanged first.
  std::vector<K*> receive(k, nullptr);
  std::vector<V*> value_receive(k, nullptr);
  for (std::size_t d : filled) {
    receive[d] = other(run[d], key_data(d), spare[d].data());
    if constexpr (with_values) value_receive[d] = other(value_run[d], value_data(d), value_spare[d].data());
  }
  const bool in_place = reads_in_place(group, plan);
  if (stats) stats->merged_in_place = in_place;
  std::vector<std::vector<std::size_t>> lengths(k);
  if (in_place) {
    // Every receiver reads every sender's sorted run, and no slot overwrites its run (its
    // next merge pass) before every reader is done with it, also when an error stops the
    // enqueueing halfway.
    join_streams(group, filled);
    join_slots readers_done(group, filled);
    for (std::size_t d : filled) {
      device_guard guard(group.device(d));
      cudaStream_t stream = group.stream(d);
      std::vector<run_piece<K, V>> pieces;
      for (std::size_t s = 0; s < k; ++s) {
        const std::size_t count = plan.count(s, d);
        if (count == 0) continue;
        const std::size_t at = plan.send_offset(s, d);
        if constexpr (with_values)
          pieces.push_back({run[s] + at, value_run[s] + at, count});
        else
          pieces.push_back({run[s] + at, nullptr, count});
      }
      lengths[d] = merge_pieces(pieces, receive[d], value_receive[d], order, group.pool(d), stream);
    }
    readers_done.join();
  } else {
    all_to_all(group, plan, run, receive);
    if constexpr (with_values) all_to_all(group, plan, value_run, value_receive);
    for (std::size_t d : filled)
      for (std::size_t s = 0; s < k; ++s) lengths[d].push_back(plan.count(s, d));
  }

  // 4. Each slot merges its runs, using the buffer its own run was sent from (every reader
  //    of it is done: the exchange, or the join above, leaves every slot's stream after
  //    them), and ends in its segment.
  for (std::size_t d : filled) {
    device_guard guard(group.device(d));
    cudaStream_t stream = group.stream(d);
    std::tie(run[d], value_run[d]) = merge_runs(receive[d], run[d], value_receive[d], value_run[d],
                                                std::move(lengths[d]), order, group.pool(d), stream);
    settle_into_segment(d);
  }
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
  try {
    sort_in_layout(keys, &lined_up, comp);
  } catch (...) {
    // The keys may already have moved, each segment sorted by itself with its values (the
    // split search refuses a comparator before anything crosses segments): put the values
    // back beside them. An error later in the exchange can leave the pairs broken.
    try {
      values.copy_range_from(lined_up, 0, values.size(), 0);
    } catch (...) {  // the sort's error is the one to report
    }
    throw;
  }
  values.copy_range_from(lined_up, 0, values.size(), 0);
}

// ---- is_sorted, lower_bound, upper_bound -------------------------------------------------

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

/// What is_sorted knows of a run of consecutive elements: its first and last element and
/// whether no element comes before its predecessor. `empty` marks the identity.
template <class T>
struct sorted_run {
  unsigned sorted;
  unsigned empty;
  T first;
  T last;
};

/// Joins two adjacent runs (associative, not commutative): sorted when both are and the
/// right run's first element does not come before the left run's last.
template <class Comp>
struct join_sorted_runs {
  Comp comp;
  template <class T>
  __host__ __device__ sorted_run<T> operator()(const sorted_run<T>& left, const sorted_run<T>& right) const {
    if (left.empty) return right;
    if (right.empty) return left;
    sorted_run<T> joined = left;
    joined.last = right.last;
    joined.sorted = left.sorted && right.sorted && !comp(right.first, left.last) ? 1u : 0u;
    return joined;
  }
};

/// *out = the run x[0, n) taken as sorted (n > 0); find_descent_in_run corrects that.
/// Written whole, padding included, so the fold reads no uninitialised byte.
template <class T>
__global__ void describe_run(const T* x, std::size_t n, sorted_run<T>* out) {
  sorted_run<T> run;
  memset(&run, 0, sizeof(run));
  run.sorted = 1u;
  run.first = x[0];
  run.last = x[n - 1];
  memcpy(out, &run, sizeof(run));
}

/// out->sorted = 0 when some x[i+1] comes before x[i]. Every writer writes the same value.
template <class T, class Comp>
__global__ void find_descent_in_run(const T* x, std::size_t n, Comp comp, sorted_run<T>* out) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i + 1 < n; i += stride)
    if (comp(x[i + 1], x[i])) {
      *static_cast<volatile unsigned*>(&out->sorted) = 0u;
      return;
    }
}

/// is_sorted as a local step per segment (its run: first, last, sorted inside) and the
/// in-order reduction of the runs, which checks each boundary between segments: every
/// segment's kernels run at once, and the host waits once, for the result.
template <class T, class Comp>
bool is_sorted_impl(const distributed_vector<T>& v, const Comp& comp) {
  if (v.size() < 2) return true;
  sorted_run<T> identity;
  std::memset(&identity, 0, sizeof(identity));
  identity.sorted = 1u;
  identity.empty = 1u;
  range_ref<T> range(v, 0, v.size());
  const sorted_run<T> whole =
      reduce_pieces<sorted_run<T>, sorted_run<T>>(
          range, join_sorted_runs<Comp>{comp}, identity,
          [&](const piece_context& ctx, sorted_run<T>* out, bool) {
            const T* x = range.data(ctx.index);
            describe_run<<<1, 1, 0, ctx.stream>>>(x, ctx.count, out);
            check_launch("is_sorted");
            if (ctx.count > 1) {
              const unsigned blocks =
                  std::min(blocks_for(ctx.count, tuning::elementwise_threads), tuning::is_sorted_max_blocks);
              find_descent_in_run<<<blocks, tuning::elementwise_threads, 0, ctx.stream>>>(x, ctx.count, comp, out);
              check_launch("is_sorted");
            }
          })
          .get();
  return whole.sorted != 0;
}

/// The position of lower_bound (upper = false) or upper_bound in a sorted vector: the sum
/// over segments of each segment's own bound.
template <class T, class Comp>
std::size_t bound_impl(const distributed_vector<T>& v, const T& value, const Comp& comp, bool upper) {
  if (v.size() == 0) return 0;
  // Each segment's bound is a partial of reduce_pieces, added up on the device: the searches
  // run at once and the host waits once.
  range_ref<T> range(v, 0, v.size());
  return reduce_pieces<std::size_t, std::size_t>(range, cuda::std::plus<>{}, std::size_t{0},
                                                 [&](const piece_context& ctx, std::size_t* out, bool) {
                                                   bound_in_run<<<1, 1, 0, ctx.stream>>>(range.data(ctx.index),
                                                                                         ctx.count, value, comp, upper,
                                                                                         out);
                                                   check_launch(upper ? "upper_bound" : "lower_bound");
                                                 })
      .get();
}

}  // namespace multigpu::detail
