#pragma once
// Sample sort over the segments of a vector, keeping the vector's layout:
//   1. each segment sorts itself (CUB: radix sort for arithmetic keys in the default order,
//      stable merge sort for any other comparator);
//   2. every element is a (key, global index) pair: the element at position p of segment
//      s's sorted run has index offset(s) + p, a total order in which equal keys keep their
//      input order. The runs are split exactly at the segment offsets (detail/sort/split.hpp:
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
// The steps live beside this file: local_sort.hpp (1), order.hpp (the order of 1 to 4),
// split.hpp with splitters.hpp (2), merge_runs.hpp (3 and 4). This file drives them, and includes
// is_sorted.hpp and bounds.hpp, the searches of a sorted vector, for algorithm/sort.hpp.

#include <multigpu/algorithm/detail/collective/all_to_all.hpp>
#include <multigpu/algorithm/detail/collective/join.hpp>
#include <multigpu/algorithm/detail/sort/bounds.hpp>
#include <multigpu/algorithm/detail/sort/is_sorted.hpp>
#include <multigpu/algorithm/detail/sort/local_sort.hpp>
#include <multigpu/algorithm/detail/sort/merge_runs.hpp>
#include <multigpu/algorithm/detail/sort/order.hpp>
#include <multigpu/algorithm/detail/sort/split.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu::detail {

/// What a sort did, for tests of its balance and its search: how many elements each slot
/// received (empty when the sort needed no exchange), how many rounds the exact splitting
/// took, and whether the receivers merged straight from the senders' runs.
struct sort_stats {
  std::vector<std::size_t> bucket_sizes;
  std::size_t split_rounds = 0;
  bool merged_in_place = false;
};

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
  detail::vector_access::copy_range_from(lined_up, values, 0, values.size(), 0);
  try {
    sort_in_layout(keys, &lined_up, comp);
  } catch (...) {
    // The keys may already have moved, each segment sorted by itself with its values (the
    // split search refuses a comparator before anything crosses segments): put the values
    // back beside them. An error later in the exchange can leave the pairs broken.
    try {
      detail::vector_access::copy_range_from(values, lined_up, 0, values.size(), 0);
    } catch (...) {  // the sort's error is the one to report
    }
    throw;
  }
  detail::vector_access::copy_range_from(values, lined_up, 0, values.size(), 0);
}

}  // namespace multigpu::detail
