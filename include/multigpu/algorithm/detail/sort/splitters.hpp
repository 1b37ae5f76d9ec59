#pragma once
// The host side of the sort's exact split (detail/sort/split.hpp runs it on the devices): the
// splitting of k sorted runs at given global ranks. Pure host arithmetic, tested on the CPU.
//
// Every element is a (key, global index) pair, where the index of the element at position p
// of segment s's stably sorted run is offset(s) + p. Ordering by (key, index) is a total
// order in which equal keys keep their input order, so every rank t names exactly one
// element, and equal keys split between segments like distinct keys.

#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/core/error.hpp>

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace multigpu::detail {

/// How many candidates each run offers per target and round (the values in local/tuning.hpp).
/// Every round shrinks each run's window to below one candidate spacing, so more candidates
/// mean fewer rounds (each one wait of the host); but a round's candidates number
/// (runs - 1) * runs of them, every run counts them all, and the counts live in pinned host
/// memory that the staging pool keeps: runs^2 (runs - 1) of them per unit, held within 2^18
/// (2 MiB of counts), down to 16. At most 512, which splits runs of 2^27 elements in three
/// rounds; fewer from 9 runs on.
inline std::size_t candidates_per_run(std::size_t runs) {
  if (runs < 2) return tuning::split_candidates_most;
  if (runs > 64) return tuning::split_candidates_least;  // the bound is below the floor from 26 runs on
  return std::clamp<std::size_t>(tuning::split_counts_per_round / (runs * runs * (runs - 1)),
                                 tuning::split_candidates_least, tuning::split_candidates_most);
}

/// Exact splitting of k sorted runs at target ranks: for each target t, how many elements of
/// each run come before the element of global rank t in (key, index) order, so that the
/// counts sum to t. This is what lets every segment receive exactly its own size.
///
/// The search keeps, per target and run, a window [lo, hi] that holds the answer. Each round
/// every run offers up to `per_run` evenly spaced positions of its window as candidates; the
/// caller finds, for every candidate, how many elements of every run come before it (a
/// binary search on the device); a candidate's global rank is the sum. The nearest
/// candidates below and above t then narrow every window to less than one candidate
/// spacing, so about log(run size) / log(per_run) rounds suffice, and a window that fits in
/// one round's candidates ends the search (the element of rank t is among them, or every
/// window has closed on the answer).
class exact_splitting {
 public:
  /// One candidate: position `position` of run `run`, offered for target `target`.
  struct candidate {
    std::size_t run;
    std::size_t position;
    std::size_t target;
  };

  /// targets must be non-decreasing and at most the total of run_sizes
  /// (std::invalid_argument otherwise).
  exact_splitting(std::vector<std::size_t> run_sizes, std::vector<std::size_t> targets, std::size_t per_run)
      : sizes_(std::move(run_sizes)), targets_(std::move(targets)), per_run_(std::max<std::size_t>(per_run, 2)) {
    const std::size_t total = std::accumulate(sizes_.begin(), sizes_.end(), std::size_t{0});
    for (std::size_t j = 0; j < targets_.size(); ++j)
      if (targets_[j] > total || (j > 0 && targets_[j] < targets_[j - 1]))
        throw std::invalid_argument("exact_splitting: the target ranks must be non-decreasing and at most the total");
    const std::size_t k = sizes_.size();
    lo_.assign(targets_.size() * k, 0);
    hi_.resize(targets_.size() * k);
    for (std::size_t j = 0; j < targets_.size(); ++j)
      for (std::size_t s = 0; s < k; ++s) hi_[j * k + s] = sizes_[s];
    by_run_.resize(k);
    for (std::size_t j = 0; j < targets_.size(); ++j) settle(j);
    // A strict weak order needs about log(largest run) / log(per_run) rounds, plus one; twice
    // that and a margin, and the order must be inconsistent.
    const std::size_t largest = sizes_.empty() ? 0 : *std::max_element(sizes_.begin(), sizes_.end());
    std::size_t log = 0;
    for (std::size_t reach = 1; reach <= largest; ++log)
      reach = reach > largest / per_run_ ? largest + 1 : reach * per_run_;
    max_rounds_ = 2 * log + 4;
  }

  std::size_t runs() const noexcept { return sizes_.size(); }
  std::size_t targets() const noexcept { return targets_.size(); }
  std::size_t rounds() const noexcept { return rounds_; }

  bool done() const {
    for (std::size_t j = 0; j < targets_.size(); ++j)
      if (!settled(j)) return false;
    return true;
  }

  /// Chooses this round's candidates: for every run in turn, the positions it offers for every
  /// unsettled target. candidates() lists them run by run, in the order of positions(run).
  void plan_round() {
    if (rounds_ >= max_rounds_)
      throw std::invalid_argument(concat_reason("the split search did not converge in ", max_rounds_, " rounds"));
    const std::size_t k = runs();
    candidates_.clear();
    for (std::size_t s = 0; s < k; ++s) {
      by_run_[s].clear();
      for (std::size_t j = 0; j < targets_.size(); ++j) {
        if (settled(j)) continue;
        const std::size_t lo = lo_[j * k + s], width = hi_[j * k + s] - lo;
        const std::size_t count = std::min(width, per_run_);
        for (std::size_t i = 0; i < count; ++i) {
          const std::size_t position = lo + (width <= per_run_ ? i : i * width / per_run_);
          by_run_[s].push_back(position);
          candidates_.push_back({s, position, j});
        }
      }
    }
    ++rounds_;
  }

  const std::vector<candidate>& candidates() const noexcept { return candidates_; }
  /// The positions of run s among candidates(), in order.
  const std::vector<std::size_t>& positions(std::size_t run) const { return by_run_.at(run); }

  /// before[s][c]: how many elements of run s come before candidate c in (key, index) order.
  void absorb(const std::vector<std::vector<std::size_t>>& before) {
    const std::size_t k = runs();
    if (before.size() != k) throw std::invalid_argument("exact_splitting::absorb: one count list per run");
    for (const auto& counts : before)
      if (counts.size() != candidates_.size())
        throw std::invalid_argument("exact_splitting::absorb: one count per candidate");
    absorb_counts([&](std::size_t s, std::size_t c) { return before[s][c]; });
  }
  /// The same from one table where run s's counts start at counts + s * stride (the counting
  /// kernels write it in place), read where it lies.
  void absorb(const std::size_t* counts, std::size_t stride) {
    if (stride < candidates_.size()) throw std::invalid_argument("exact_splitting::absorb: one count per candidate");
    absorb_counts([&](std::size_t s, std::size_t c) { return counts[s * stride + c]; });
  }

  /// For target j, once done(): how many elements of each run come before the split.
  std::vector<std::size_t> split(std::size_t j) const {
    const std::size_t k = runs();
    return {lo_.begin() + static_cast<std::ptrdiff_t>(j * k), lo_.begin() + static_cast<std::ptrdiff_t>((j + 1) * k)};
  }

  /// Every target's split, once done(), checked: each sums to its target, stays within its
  /// run, and never decreases from one target to the next. A strict weak order always passes;
  /// an order that is not one can end the search with splits that fail, and then
  /// std::invalid_argument is thrown rather than an exchange planned from them.
  std::vector<std::vector<std::size_t>> checked_splits() const {
    const std::size_t k = runs();
    std::vector<std::vector<std::size_t>> out;
    for (std::size_t j = 0; j < targets_.size(); ++j) {
      out.push_back(split(j));
      std::size_t sum = 0;
      for (std::size_t s = 0; s < k; ++s) {
        sum += out[j][s];
        if (out[j][s] > sizes_[s] || (j > 0 && out[j][s] < out[j - 1][s]))
          throw std::invalid_argument(concat_reason("the splits of the sorted runs are not nested"));
      }
      if (sum != targets_[j])
        throw std::invalid_argument(concat_reason("the splits of the sorted runs do not add up to their ranks"));
    }
    return out;
  }

 private:
  /// absorb's work, with before(s, c) the count of run s for candidate c.
  template <class Before>
  void absorb_counts(Before&& before) {
    const std::size_t k = runs();
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::vector<std::size_t> below(targets_.size(), none), above(targets_.size(), none);
    std::vector<std::size_t> below_rank(targets_.size(), 0), above_rank(targets_.size(), 0);
    for (std::size_t c = 0; c < candidates_.size(); ++c) {
      const std::size_t j = candidates_[c].target;
      std::size_t rank = 0;
      for (std::size_t s = 0; s < k; ++s) rank += before(s, c);
      const std::size_t t = targets_[j];
      if (rank == t) {  // the element of rank t itself: the split is just before it
        for (std::size_t s = 0; s < k; ++s) lo_[j * k + s] = hi_[j * k + s] = before(s, c);
        below[j] = above[j] = none;
        continue;
      }
      if (settled(j)) continue;
      if (rank < t && (below[j] == none || rank > below_rank[j])) below[j] = c, below_rank[j] = rank;
      if (rank > t && (above[j] == none || rank < above_rank[j])) above[j] = c, above_rank[j] = rank;
    }
    for (std::size_t j = 0; j < targets_.size(); ++j) {
      if (settled(j)) continue;
      for (std::size_t s = 0; s < k; ++s) {
        // Everything before a candidate of rank < t, and the candidate itself, is among the
        // first t; nothing from a candidate of rank > t on is.
        if (below[j] != none) {
          const candidate& a = candidates_[below[j]];
          lo_[j * k + s] = std::max(lo_[j * k + s], before(s, below[j]) + (a.run == s ? 1 : 0));
        }
        if (above[j] != none) hi_[j * k + s] = std::min(hi_[j * k + s], before(s, above[j]));
        if (lo_[j * k + s] > hi_[j * k + s])
          throw std::invalid_argument(concat_reason("the counts of elements before the candidates contradict each other"));
      }
      settle(j);
    }
  }

  bool settled(std::size_t j) const {
    const std::size_t k = runs();
    for (std::size_t s = 0; s < k; ++s)
      if (lo_[j * k + s] != hi_[j * k + s]) return false;
    return true;
  }
  /// Closes target j's windows when one side already sums to its target.
  void settle(std::size_t j) {
    const std::size_t k = runs();
    std::size_t low = 0, high = 0;
    for (std::size_t s = 0; s < k; ++s) low += lo_[j * k + s], high += hi_[j * k + s];
    if (low == targets_[j])
      for (std::size_t s = 0; s < k; ++s) hi_[j * k + s] = lo_[j * k + s];
    else if (high == targets_[j])
      for (std::size_t s = 0; s < k; ++s) lo_[j * k + s] = hi_[j * k + s];
  }

  template <class... Parts>
  static std::string concat_reason(const Parts&... parts) {
    return concat("sort: the comparator is not a strict weak order (", parts...,
                  "); each segment was sorted by itself and nothing crossed segments");
  }

  std::vector<std::size_t> sizes_, targets_;
  std::size_t per_run_;
  std::size_t max_rounds_ = 0;
  std::vector<std::size_t> lo_, hi_;  // [target * runs + run]
  std::vector<candidate> candidates_;
  std::vector<std::vector<std::size_t>> by_run_;
  std::size_t rounds_ = 0;
};

}  // namespace multigpu::detail
