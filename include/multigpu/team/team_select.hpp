#pragma once
// Size-changing algorithms and copies over team_vectors. Contains device code: include it (or
// team_algorithms.hpp) from CUDA translation units.
//
// - copy_if and remove_copy_if keep the layout as the single-process forms do: each rank keeps
//   its own survivors, in order, on its own devices (the single-process layout-keeping
//   copy_if of its local vector), so no element crosses a rank. One all_gather carries the
//   survivor counts with the collective's check; the result's rank layout is
//   distribution::from_sizes(survivors per rank).
// - rebalance returns a vector whose ranks hold even blocks again (one all_to_all_v).
// - copy between team vectors: local when the rank layouts agree, else a redistribution.

#include <multigpu/algorithm/copy.hpp>
#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/select.hpp>
#include <multigpu/team/team_vector.hpp>

#include <cstdint>
#include <vector>

namespace multigpu {

template <class T>
void redistribute(const team_vector<T>& from, team_vector<T>& to);

/// The elements for which pred is true, each rank keeping its own, in order, on its local
/// group: a new team_vector laid out as distribution::from_sizes(survivors per rank).
/// Collective; the local step is the single-process copy_if(v.local(), pred).
template <class T, class Pred>
team_vector<T> copy_if(const team_vector<T>& v, Pred pred) {
  std::optional<distributed_vector<T>> kept;
  const auto counts = detail::gather_collective<std::uint64_t>(v.team(), team_operation::copy_if, sizeof(T), [&] {
    kept.emplace(multigpu::copy_if(v.local(), pred));
    return std::optional<std::uint64_t>(kept->size());
  });
  std::vector<std::size_t> sizes(counts.size());
  for (std::size_t r = 0; r < counts.size(); ++r) sizes[r] = static_cast<std::size_t>(*counts[r]);
  return detail::team_vector_access<T>::adopt(v.team(), std::move(*kept), distribution::from_sizes(sizes));
}

/// The elements for which pred is false, kept as copy_if's.
template <class T, class Pred>
team_vector<T> remove_copy_if(const team_vector<T>& v, Pred pred) {
  return multigpu::copy_if(v, detail::negated<Pred>{pred});
}

/// The same elements in even blocks over the ranks (as team_vector::block), on v's local group:
/// after a filter that left most of the data on a few ranks. Collective. It returns a new
/// vector (a team_vector's rank layout is fixed at construction), unlike the single-process
/// rebalance, which works in place: `tv = rebalance(tv);`.
template <class T>
[[nodiscard("the team rebalance returns the rebalanced vector; write tv = rebalance(tv)")]]
team_vector<T> rebalance(const team_vector<T>& v) {
  team_vector<T> even = team_vector<T>::block(v.team(), v.size(), v.local().group());
  redistribute(v, even);
  return even;
}

/// Copies `from` into `to`, element i to element i: on every rank at once without
/// communication when the two have the same rank layout, else a redistribution (one
/// all_to_all_v). Same team and global size (std::invalid_argument otherwise).
template <class T>
void copy(const team_vector<T>& from, team_vector<T>& to) {
  detail::expect_same_team("copy", from.team(), to.team());
  if (from.layout() == to.layout()) {  // the same on every rank: every rank takes this branch
    multigpu::copy(from.local(), to.local());
    return;
  }
  redistribute(from, to);
}

}  // namespace multigpu
