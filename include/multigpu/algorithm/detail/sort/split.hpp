#pragma once
// The sort's exact split, on the devices: the search of detail/sort/splitters.hpp run over the
// sorted runs of a group's slots. Every slot offers candidates from its run and counts, in its
// run, the elements before every slot's candidates; the positions, the candidates and the
// counts live in one block of pinned, mapped host memory that the kernels read and write in
// place, so a round costs the host one wait. The result is the exchange plan that gives every
// slot exactly its own segment's size.

#include <multigpu/algorithm/detail/collective/all_to_all.hpp>
#include <multigpu/algorithm/detail/collective/join.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/algorithm/detail/sort/splitters.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/event_pool.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/executor.hpp>
#include <multigpu/runtime/detail/scratch.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace multigpu::detail {

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

/// Marks, when it goes out of scope (normally or by an exception), everything enqueued on
/// the given slots' streams as a use of a staging lease, so that the block is not reused
/// before the kernels that read or write it are done.
class lease_fences {
 public:
  lease_fences(const executor& exec, staging_pool::lease& lease, const std::vector<std::size_t>& slots)
      : exec_(exec), lease_(lease), slots_(slots) {}
  lease_fences(const lease_fences&) = delete;
  lease_fences& operator=(const lease_fences&) = delete;
  ~lease_fences() {
    for (std::size_t s : slots_) {
      try {
        quiet_device_guard guard(exec_.device(s));
        lease_.fence(exec_.device(s), exec_.stream(s));
      } catch (...) {  // nothing more can be ordered; the error that brought us here is reported
      }
    }
  }

 private:
  const executor& exec_;
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
  executor& exec = executor_of(group);
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
  staging_pool::lease host = exec.staging().acquire(bytes);
  lease_fences fences(exec, host, filled);
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
      device_guard guard(exec.device(s));
      cudaStream_t stream = exec.stream(s);
      offer_candidates<<<blocks_for(m, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
          run[s], positions + s * offered_most, m, offsets[s], keys + first[s], index + first[s]);
      check_launch("offer_candidates");
    }
    // Every slot counts, in its run, the elements before every candidate, once every
    // slot's candidates are in.
    join_streams(group, filled);
    for (std::size_t d : filled) {
      device_guard guard(exec.device(d));
      cudaStream_t stream = exec.stream(d);
      count_before<<<blocks_for(count, tuning::search_threads), tuning::search_threads, 0, stream>>>(
          run[d], sizes[d], offsets[d], keys, index, count, order, counted + d * most);
      check_launch("count_before");
    }
    for (std::size_t d : filled) {
      device_guard guard(exec.device(d));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(exec.stream(d)));
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

}  // namespace multigpu::detail
