#pragma once
// Pure host logic of the team algorithms, testable without MPI or a GPU: folding per-rank
// partial results in rank order (so non-commutative operators stay correct), the carries of
// a scan over ranks, the first best element over ranks, the all_to_all_v plan that moves
// a vector from one rank layout to another, and the exact splitting of a team sort.

#include <multigpu/container/distribution.hpp>
#include <multigpu/core/error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace multigpu {

/// op(...op(op(p0, p1), p2)..., pk) over the partials that exist (ranks without elements
/// contribute nothing), in rank order. None at all: std::nullopt.
template <class T, class Op>
std::optional<T> fold_in_rank_order(std::span<const std::optional<T>> partials, Op op) {
  std::optional<T> result;
  for (const std::optional<T>& p : partials) {
    if (!p) continue;
    result = result ? std::optional<T>(op(*result, *p)) : p;
  }
  return result;
}

/// carries[r] = the fold of the totals of ranks 0 .. r-1 (std::nullopt when they hold no
/// elements): what rank r's local scan must be preceded by.
template <class T, class Op>
std::vector<std::optional<T>> rank_carries(std::span<const std::optional<T>> totals, Op op) {
  std::vector<std::optional<T>> carries(totals.size());
  std::optional<T> running;
  for (std::size_t r = 0; r < totals.size(); ++r) {
    carries[r] = running;
    if (totals[r]) running = running ? std::optional<T>(op(*running, *totals[r])) : totals[r];
  }
  return carries;
}

/// A rank's best element: its global index and value.
template <class T>
struct ranked_element {
  std::size_t index;
  T value;
};

/// The first best over ranks' candidates: `better(x, y)` says x beats y; on a tie the smaller
/// global index wins (as std::min_element and std::max_element return the first).
template <class T, class Better>
std::optional<ranked_element<T>> first_best_in_rank_order(std::span<const std::optional<ranked_element<T>>> candidates,
                                                          Better better) {
  std::optional<ranked_element<T>> best;
  for (const auto& c : candidates) {
    if (!c) continue;
    if (!best || better(c->value, best->value) ||
        (!better(best->value, c->value) && c->index < best->index))
      best = c;
  }
  return best;
}

/// Element counts and displacements of an all_to_all_v, one entry per rank. Displacements
/// are local element indices: into this rank's part of `from` for sends, of `to` for receives.
struct redistribution_plan {
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;
  friend bool operator==(const redistribution_plan&, const redistribution_plan&) = default;
};

/// How `rank` takes part in moving a vector laid out over ranks as `from` to the layout `to`
/// (same total size and rank count, else std::invalid_argument).
redistribution_plan plan_redistribution(const distribution& from, const distribution& to, std::size_t rank);

// ---- Exact splitting of a team sort (team_sort.hpp) ----------------------------------------
//
// Each rank holds a sorted part; rank r must end with the global sorted positions
// [layout.segment_offset(r), layout.segment_offset(r + 1)). For every inner boundary k (the
// global position layout.segment_offset(b), 0 < b < ranks) the search finds how many of its
// sorted elements each rank puts before k: all elements before k come (by the comparator)
// no later than all elements after it, and equal elements go in rank order, which keeps the
// sort stable across ranks. Each round every rank proposes the middle of its open range,
// the ranks take the weighted median of the proposals as the pivot and report how many of
// their elements come before it (lower bound) and up to it (upper bound); the open ranges
// then shrink (by at least a quarter of their total) or the boundary settles.

/// A rank's candidate pivot and the size of its open range.
template <class T>
struct weighted_candidate {
  T value;
  std::size_t weight;
};

/// The weighted median of the candidates (by comp): the first, in sorted order, at which the
/// running weight reaches half of the total. Reorders `candidates`; at least one is needed
/// (std::invalid_argument otherwise).
template <class T, class Comp>
T weighted_median(std::span<weighted_candidate<T>> candidates, Comp comp) {
  MULTIGPU_EXPECTS(!candidates.empty(), "weighted_median: no candidates");
  std::stable_sort(candidates.begin(), candidates.end(), [&](const weighted_candidate<T>& a,
                                                             const weighted_candidate<T>& b) {
    return comp(a.value, b.value);
  });
  std::size_t total = 0;
  for (const auto& c : candidates) total += c.weight;
  std::size_t running = 0;
  for (const auto& c : candidates) {
    running += c.weight;
    if (2 * running >= total) return c.value;
  }
  return candidates.back().value;
}

/// A rank's counts of elements before a pivot (lower bound) and up to it (upper bound).
struct pivot_rank {
  std::uint64_t below, through;
};

/// splits[b][r]: how many of rank r's sorted elements go to ranks before b (b = 0 .. ranks;
/// splits[0][r] = 0, splits[ranks][r] = rank r's size).
using split_table = std::vector<std::vector<std::size_t>>;

/// The state of the exact-splitting rounds, the same on every rank (it changes only by what
/// every rank received).
class split_search {
 public:
  /// Rank r holds layout.segment_size(r) sorted elements and must end with as many.
  explicit split_search(const distribution& layout);

  bool settled() const noexcept;
  /// The inner boundaries not settled yet, ascending.
  std::vector<std::size_t> open_boundaries() const;
  /// Rank r's open range [lo, hi) of local positions for boundary b.
  std::pair<std::size_t, std::size_t> range(std::size_t b, std::size_t r) const;
  /// Applies one round's counts for boundary b's pivot (one entry per rank).
  void narrow(std::size_t b, std::span<const pivot_rank> counts);
  const split_table& table() const noexcept { return splits_; }

 private:
  void settle_if_closed(std::size_t b);

  std::vector<std::size_t> target_;  // global position of boundary b
  split_table lo_, hi_, splits_;
  std::vector<bool> settled_;
};

// ---- Gather and scatter by global index (team_gather.hpp) ---------------------------------

/// A rank's requests by global index, grouped by the rank that owns each index (in rank
/// order; request order kept within an owner): what to send to whom, and where each answer
/// goes back.
struct index_routes {
  std::vector<std::size_t> send_counts, send_displs;  // per owner rank, into local_index
  std::vector<std::uint64_t> local_index;             // grouped: the index in its owner's part
  std::vector<std::size_t> position;                  // grouped: the request it serves
};

/// Routes the global indices (each < owners.size(), else std::out_of_range) to their owners.
index_routes plan_index_routes(std::span<const std::uint64_t> global, const distribution& owners);

/// How `rank` takes part in the all_to_all_v of a team sort: it sends its sorted positions
/// [splits[d][rank], splits[d+1][rank]) to rank d and receives from every rank s its
/// [splits[rank][s], splits[rank+1][s]), in rank order.
redistribution_plan plan_sorted_exchange(const split_table& splits, std::size_t rank);

}  // namespace multigpu
