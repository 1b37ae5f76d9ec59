#pragma once
// Pure host logic of the team algorithms, testable without MPI or a GPU: folding per-rank
// partial results in rank order (so non-commutative operators stay correct), the carries of
// a scan over ranks, the first best element over ranks, and the all_to_all_v plan that moves
// a vector from one rank layout to another.

#include <multigpu/container/distribution.hpp>

#include <cstddef>
#include <optional>
#include <span>
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

}  // namespace multigpu
