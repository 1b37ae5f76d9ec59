#pragma once
// Sorting and searching over team_vectors: sort, stable_sort, sort_by_key, stable_sort_by_key,
// is_sorted, lower_bound, upper_bound. Contains device code: include it (or
// team_algorithms.hpp) from CUDA translation units.
//
// A team sort is a local step plus named collectives, like every team algorithm:
//   1. each rank stably sorts its own elements (the single-process stable_sort);
//   2. exact splitting: the ranks agree, for every rank boundary, how many of its sorted
//      elements each rank sends to which rank, so that every rank ends with exactly as many
//      elements as it started with (multi-sequence selection: rounds of one all_gather of
//      candidate pivots and one all_gather of their local ranks, team_plan.hpp), reading the
//      sorted part where it is (on the device, one read and one launch a round) or from a
//      host copy on the host path;
//   3. one all_to_all_v moves the elements (a second one the values): from device memory
//      where the team's exchange_path allows it, else through host memory;
//   4. each rank stably sorts what it received (runs arrive in rank order).
// Every sort here is stable: equal keys keep their global input order.
//
// Comparators run on the device (local steps) and on the host (pivot choice, rank
// boundaries), so they must be __host__ __device__ and a strict weak order.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/detail/sort/bounds.hpp>
#include <multigpu/algorithm/sort.hpp>
#include <multigpu/team/team_exchange.hpp>
#include <multigpu/team/team_plan.hpp>
#include <multigpu/team/team_vector.hpp>

#include <cuda/std/functional>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {
namespace detail {

/// One rank's word in a splitting round, per unsettled boundary: a candidate pivot (the middle
/// of its open range), or none when that range is empty.
template <class T>
struct split_candidate {
  T value;
  std::uint64_t has;
};

/// A rank's locally sorted part as the split search reads it, in host memory: the elements at
/// some positions, and how many elements come before and up to each pivot.
template <class T, class Comp>
struct host_sorted_part {
  std::span<const T> sorted;
  Comp comp;
  std::vector<T> at(std::span<const std::size_t> positions) const {
    std::vector<T> values;
    values.reserve(positions.size());
    for (std::size_t p : positions) values.push_back(sorted[p]);
    return values;
  }
  std::vector<pivot_rank> bounds(std::span<const T> pivots) const {
    std::vector<pivot_rank> counts;
    counts.reserve(pivots.size());
    for (const T& pivot : pivots)
      counts.push_back({static_cast<std::uint64_t>(std::lower_bound(sorted.begin(), sorted.end(), pivot, comp) -
                                                   sorted.begin()),
                        static_cast<std::uint64_t>(std::upper_bound(sorted.begin(), sorted.end(), pivot, comp) -
                                                   sorted.begin())});
    return counts;
  }
};

/// counts[i] = {lower bound, upper bound} of pivots[i] in sorted[0, n): one thread per pivot.
template <class T, class Comp>
__global__ void bound_pivots(const T* sorted, std::uint64_t n, const T* pivots, std::size_t k, Comp comp,
                             pivot_rank* counts) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= k) return;
  const T pivot = pivots[i];
  const std::uint64_t below = bound_position(sorted, 0, n, pivot, comp, false);
  counts[i].below = below;
  counts[i].through = bound_position(sorted, below, n, pivot, comp, true);  // the upper bound is at or past it
}

/// The same part left on its device (a one-slot vector): a round reads its candidates with one
/// wait and bounds every pivot in one launch, so the part never crosses to the host. The
/// pivots go in and their bounds come out through one pinned, mapped staging block that the
/// kernel reads and writes in place: one wait a round, nothing allocated once the block exists.
template <class T, class Comp>
struct device_sorted_part {
  const distributed_vector<T>& sorted;
  Comp comp;
  std::vector<T> at(std::span<const std::size_t> positions) const { return sorted.read(positions); }
  std::vector<pivot_rank> bounds(std::span<const T> pivots) const {
    if (pivots.empty()) return {};
    const device_group& g = sorted.group();
    const std::size_t k = pivots.size();
    constexpr std::size_t align = alignof(pivot_rank) > alignof(T) ? alignof(pivot_rank) : alignof(T);
    const std::size_t counts_at = (k * sizeof(T) + align - 1) / align * align;
    staging_pool::lease block = executor_of(g).staging().acquire(counts_at + k * sizeof(pivot_rank));
    block.order_before_host();  // its last user is done before the host writes
    std::memcpy(block.data(), pivots.data(), k * sizeof(T));
    const T* on_host = block.as<const T>();
    pivot_rank* counts = reinterpret_cast<pivot_rank*>(static_cast<std::byte*>(block.data()) + counts_at);
    {
      device_guard guard(g.device(0));
      block.order_before(g.stream(0));  // the lease's rule; enqueues no wait: the host wait above cleared its fences
      constexpr int threads = 128;
      const auto blocks = static_cast<unsigned>((k + threads - 1) / threads);
      bound_pivots<<<blocks, threads, 0, g.stream(0)>>>(one_slot_data(sorted), sorted.size(), on_host, k, comp,
                                                        counts);
      check_launch("bound_pivots");
      block.fence(g.device(0), g.stream(0));
    }
    block.order_before_host();
    return std::vector<pivot_rank>(counts, counts + k);
  }
};

/// Exact splits of a team's locally sorted parts: which local positions of every rank bound
/// the elements that go to each rank, so that rank r receives global sorted positions
/// [layout.segment_offset(r), +segment_size(r)). Collective: every rank calls it at the same
/// point with the same layout (the team_vector's) and its own sorted part (host_sorted_part
/// or device_sorted_part); a round costs two small all_gathers, each carrying the status of
/// the local read before it (agreed_all_gather), so that a read that fails on one rank ends
/// the sort on every rank.
template <class T, class Part, class Comp>
split_table team_exact_splits(const team& t, team_operation op, const Part& sorted, const distribution& layout,
                              Comp comp) {
  static_assert(std::is_trivially_copyable_v<T>, "team sort moves elements as bytes");
  const std::size_t ranks = static_cast<std::size_t>(t.size());
  const std::size_t me = static_cast<std::size_t>(t.rank());
  split_search search(layout);
  while (!search.settled()) {
    const std::vector<std::size_t> open = search.open_boundaries();
    // Round, first half: every rank's candidate pivot for every open boundary.
    std::vector<split_candidate<T>> mine(open.size()), all(open.size() * ranks);
    const auto candidates = attempt_step("split candidates", [&] {
      std::vector<std::size_t> middles;
      for (std::size_t j = 0; j < open.size(); ++j) {
        const auto [lo, hi] = search.range(open[j], me);
        mine[j].has = hi > lo ? 1 : 0;
        if (hi > lo) middles.push_back(lo + (hi - lo) / 2);
      }
      const std::vector<T> values = sorted.at(std::span<const std::size_t>(middles));
      for (std::size_t j = 0, c = 0; j < open.size(); ++j)
        if (mine[j].has) mine[j].value = values[c++];
    });
    agreed_all_gather(t, op, "split candidates", candidates.failure, mine.data(), all.data(),
                      mine.size() * sizeof(split_candidate<T>));
    // Second half: every rank's count of elements before and up to each open boundary's pivot.
    std::vector<T> pivots;
    pivots.reserve(open.size());
    for (std::size_t j = 0; j < open.size(); ++j) {
      std::vector<weighted_candidate<T>> c;
      for (std::size_t r = 0; r < ranks; ++r) {
        const split_candidate<T>& e = all[r * open.size() + j];
        const auto [lo, hi] = search.range(open[j], r);
        if (e.has) c.push_back({e.value, hi - lo});
      }
      pivots.push_back(weighted_median(std::span<weighted_candidate<T>>(c), comp));
    }
    auto bounded = attempt_step("split bounds", [&] { return sorted.bounds(std::span<const T>(pivots)); });
    const std::vector<pivot_rank> counts = bounded.failure ? std::vector<pivot_rank>(open.size()) : bounded.take();
    std::vector<pivot_rank> all_counts(open.size() * ranks);
    agreed_all_gather(t, op, "split bounds", bounded.failure, counts.data(), all_counts.data(),
                      counts.size() * sizeof(pivot_rank));
    for (std::size_t j = 0; j < open.size(); ++j) {
      std::vector<pivot_rank> column(ranks);
      for (std::size_t r = 0; r < ranks; ++r) column[r] = all_counts[r * open.size() + j];
      search.narrow(open[j], column);
    }
  }
  return search.table();
}

/// The team sort after the local sort: the splits, the exchange of keys (and values along),
/// and a stable local sort of what arrived. From device memory where the team's
/// exchange_path allows it, else through host memory. Both paths make the same calls, so
/// ranks may take different ones: an agreed copy to the host (nothing to copy on the device
/// path), the split rounds, for the keys and then the values an agreed preparation and one
/// all_to_all_v (bulk_exchange, in place: the values' receiving vector is made only once the
/// keys' old storage is gone), and an agreed local sort of what arrived. A failure on one
/// rank thus ends the sort on every rank (team.hpp).
template <class K, class V, class Comp>
void team_sort_sorted_parts(const team& t, team_operation op, const distribution& layout,
                            distributed_vector<K>& keys, distributed_vector<V>* values, Comp comp) {
  const bool on_device = values ? exchange_on_device(t, keys, *values) : exchange_on_device(t, keys);
  const std::vector<K> host_keys =
      agreed_step(t, op, "copy to the host", [&] { return on_device ? std::vector<K>{} : to_vector(keys); });
  const split_table splits =
      on_device ? team_exact_splits<K>(t, op, device_sorted_part<K, Comp>{keys, comp}, layout, comp)
                : team_exact_splits<K>(t, op, host_sorted_part<K, Comp>{std::span<const K>(host_keys), comp}, layout, comp);
  const redistribution_plan plan = plan_sorted_exchange(splits, static_cast<std::size_t>(t.rank()));
  // The host path's keys are on the host already.
  bulk_exchange<K> keys_exchange(t, plan, keys, keys, on_device, on_device ? nullptr : &host_keys);
  agreed_step(t, op, "allocation", [&] { keys_exchange.prepare(); });
  keys_exchange.move();
  std::optional<bulk_exchange<V>> values_exchange;
  if (values) {
    values_exchange.emplace(t, plan, *values, *values, on_device);
    agreed_step(t, op, "allocation", [&] { values_exchange->prepare(); });
    values_exchange->move();
  }
  agreed_step(t, op, "local sort", [&] {
    keys_exchange.put_in_place();
    if (values) {
      values_exchange->put_in_place();
      stable_sort_by_key(keys, *values, comp);
    } else {
      stable_sort(keys, comp);
    }
  });
}

}  // namespace detail

/// Sorts v by comp across the team, keeping equal elements in their global input order; every
/// rank keeps its element count. Collective.
template <class T, class Comp = cuda::std::less<>>
void stable_sort(team_vector<T>& v, Comp comp = {}) {
  detail::run_collective(v.team(), team_operation::sort, sizeof(T), [&] { stable_sort(v.local(), comp); });
  if (v.team().size() == 1) return;
  detail::team_sort_sorted_parts<T, T>(v.team(), team_operation::sort, v.layout(), v.local(), nullptr, comp);
}

/// As stable_sort (the team sort is always stable).
template <class T, class Comp = cuda::std::less<>>
void sort(team_vector<T>& v, Comp comp = {}) {
  stable_sort(v, comp);
}

/// Sorts keys by comp across the team and moves values along; equal keys keep their global
/// input order. keys and values on one team with one layout (std::invalid_argument otherwise).
template <class K, class V, class Comp = cuda::std::less<>>
void stable_sort_by_key(team_vector<K>& keys, team_vector<V>& values, Comp comp = {}) {
  detail::expect_same_team("sort_by_key", keys.team(), values.team());
  MULTIGPU_EXPECTS(keys.layout() == values.layout(),
                   detail::concat("sort_by_key: keys and values are laid out differently over the ranks (sizes ",
                                  keys.size(), " and ", values.size(), "); redistribute one first"));
  detail::run_collective(keys.team(), team_operation::sort_by_key, sizeof(K),
                         [&] { stable_sort_by_key(keys.local(), values.local(), comp); });
  if (keys.team().size() == 1) return;
  detail::team_sort_sorted_parts<K, V>(keys.team(), team_operation::sort_by_key, keys.layout(), keys.local(),
                                       &values.local(), comp);
}

/// As stable_sort_by_key.
template <class K, class V, class Comp = cuda::std::less<>>
void sort_by_key(team_vector<K>& keys, team_vector<V>& values, Comp comp = {}) {
  stable_sort_by_key(keys, values, comp);
}

namespace detail {
/// A rank's view for team is_sorted: whether its part is sorted, and its first and last
/// elements.
template <class T>
struct sorted_part {
  T first, last;
  std::uint8_t sorted;
};
}  // namespace detail

/// True when no element comes before (by comp) the one ahead of it in global order. One
/// all_gather of each rank's verdict and end elements.
template <class T, class Comp = cuda::std::less<>>
bool is_sorted(const team_vector<T>& v, Comp comp = {}) {
  const auto parts = detail::gather_collective<detail::sorted_part<T>>(
      v.team(), team_operation::is_sorted, sizeof(T), [&]() -> std::optional<detail::sorted_part<T>> {
        if (v.local().empty()) return std::nullopt;
        const bool sorted = is_sorted(v.local(), comp);
        return detail::sorted_part<T>{v.local().read(0), v.local().read(v.local_size() - 1),
                                      static_cast<std::uint8_t>(sorted ? 1 : 0)};
      });
  const detail::sorted_part<T>* previous = nullptr;
  for (const auto& p : parts) {
    if (!p) continue;
    if (!p->sorted || (previous && comp(p->first, previous->last))) return false;
    previous = &*p;
  }
  return true;
}

/// In a team vector sorted by comp: the global index of the first element that does not come
/// before value, or size(). One all_gather of each rank's local bound.
template <class T, class Comp = cuda::std::less<>>
std::size_t lower_bound(const team_vector<T>& v, const std::type_identity_t<T>& value, Comp comp = {}) {
  const auto counts = detail::gather_collective<std::uint64_t>(v.team(), team_operation::lower_bound, sizeof(T), [&] {
    return std::optional<std::uint64_t>(detail::bound_impl(v.local(), value, comp, false));
  });
  std::size_t total = 0;
  for (const auto& c : counts) total += static_cast<std::size_t>(*c);
  return total;
}

/// In a team vector sorted by comp: the global index of the first element that value comes
/// before, or size().
template <class T, class Comp = cuda::std::less<>>
std::size_t upper_bound(const team_vector<T>& v, const std::type_identity_t<T>& value, Comp comp = {}) {
  const auto counts = detail::gather_collective<std::uint64_t>(v.team(), team_operation::upper_bound, sizeof(T), [&] {
    return std::optional<std::uint64_t>(detail::bound_impl(v.local(), value, comp, true));
  });
  std::size_t total = 0;
  for (const auto& c : counts) total += static_cast<std::size_t>(*c);
  return total;
}

}  // namespace multigpu
