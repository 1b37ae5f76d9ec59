#pragma once
// gather and scatter by global index over team_vectors: output[i] = input[map[i]] and
// output[map[i]] = input[i], where the index and the element may live on different ranks.
// Contains device code: include it (or team_algorithms.hpp) from CUDA translation units.
//
// Both are a check, then three exchanges through host memory (every rank-local step between
// them, and the last one, agreed by every rank: team.hpp):
//   1. every rank checks its part of the map; one all_gather carries each rank's first bad
//      index with the collective's stamp, so an index outside the target throws
//      std::out_of_range on every rank, naming it, before anything is written;
//   2. each rank groups its indices by owning rank (team_plan.hpp: plan_index_routes) and one
//      all_gather tells every rank how many requests it will serve;
//   3. one all_to_all_v sends the requests (gather: the indices; scatter: the indices and, in
//      a second one, the values); the owners run the single-process gather or scatter on
//      their local part; gather sends the answers back in one more all_to_all_v.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/gather.hpp>
#include <multigpu/team/team_plan.hpp>
#include <multigpu/team/team_vector.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace multigpu {
namespace detail {

/// A rank's first map entry outside the target: its global position and value.
struct bad_index {
  std::uint64_t position;
  std::int64_t value;
};

/// The map as unsigned global indices, after every rank has checked its part against a
/// target of `bound` elements (collective: std::out_of_range on every rank for the lowest
/// rank's first bad entry).
template <class I>
std::vector<std::uint64_t> checked_global_indices(const char* algorithm, team_operation op, std::size_t element_size,
                                                  const team_vector<I>& map, std::size_t bound) {
  static_assert(std::is_integral_v<I>, "the map holds integer indices");
  // The local step reads and converts the map: every allocation is made before the entry.
  std::vector<std::uint64_t> global;
  const auto bad = gather_collective<bad_index>(map.team(), op, element_size, [&]() -> std::optional<bad_index> {
    const std::vector<I> host = to_vector(map.local());
    for (std::size_t i = 0; i < host.size(); ++i) {
      const bool negative = std::is_signed_v<I> && host[i] < I(0);
      if (negative || static_cast<std::uint64_t>(host[i]) >= bound)
        return bad_index{map.offset() + i, static_cast<std::int64_t>(host[i])};
    }
    global.assign(host.begin(), host.end());
    return std::nullopt;
  });
  for (std::size_t r = 0; r < bad.size(); ++r)
    if (bad[r])
      throw std::out_of_range(concat(algorithm, ": map[", bad[r]->position, "] = ", bad[r]->value,
                                     " is outside a vector of ", bound, " elements (on rank ", r,
                                     "); nothing was written"));
  return global;
}

/// How many requests each rank sends this one (one all_gather of every rank's send counts,
/// which also agrees on the step `step` that made the routes: `failure`, team.hpp).
inline std::vector<std::size_t> requests_to_me(const team& t, team_operation op, const char* step,
                                               const std::exception_ptr& failure, const index_routes& routes) {
  const std::size_t ranks = static_cast<std::size_t>(t.size());
  std::vector<std::uint64_t> mine(ranks, 0), all(ranks * ranks);
  if (!failure) std::copy(routes.send_counts.begin(), routes.send_counts.end(), mine.begin());
  agreed_all_gather(t, op, step, failure, mine.data(), all.data(), ranks * sizeof(std::uint64_t));
  std::vector<std::size_t> counts(ranks);
  const auto me = static_cast<std::size_t>(t.rank());
  for (std::size_t s = 0; s < ranks; ++s) counts[s] = static_cast<std::size_t>(all[s * ranks + me]);
  return counts;
}

inline std::vector<std::size_t> displacements(std::span<const std::size_t> counts) {
  std::vector<std::size_t> displs(counts.size(), 0);
  for (std::size_t r = 1; r < counts.size(); ++r) displs[r] = displs[r - 1] + counts[r - 1];
  return displs;
}

}  // namespace detail

/// output[i] = input[map[i]] for every global i: map and output on one team with one layout,
/// input on the same team in any layout (std::invalid_argument otherwise); every index in
/// [0, input.size()) (std::out_of_range on every rank otherwise, nothing written). Collective.
template <class I, class T>
void gather(const team_vector<I>& map, const team_vector<T>& input, team_vector<T>& output) {
  detail::expect_same_team("gather", map.team(), input.team());
  detail::expect_same_team("gather", map.team(), output.team());
  MULTIGPU_EXPECTS(map.layout() == output.layout(),
                   detail::concat("gather: the map and the output are laid out differently over the ranks (sizes ",
                                  map.size(), " and ", output.size(), ")"));
  const team& t = map.team();
  constexpr team_operation op = team_operation::gather;
  const std::vector<std::uint64_t> global = detail::checked_global_indices("gather", op, sizeof(T), map, input.size());
  // Each rank-local step below is agreed before the next exchange (team.hpp).
  auto routed = detail::attempt_step("routes", [&] { return plan_index_routes(global, input.layout()); });
  const index_routes routes = routed.failure ? index_routes{} : routed.take();
  const std::vector<std::size_t> asked_counts = detail::requests_to_me(t, op, "routes", routed.failure, routes);
  const std::vector<std::size_t> asked_displs = detail::displacements(asked_counts);
  std::vector<std::uint64_t> asked;
  detail::agreed_step(t, op, "allocation", [&] { asked.resize(asked_displs.back() + asked_counts.back()); });
  t.comm().all_to_all_v(host_memory, routes.local_index.data(), std::span<const std::size_t>(routes.send_counts),
                        std::span<const std::size_t>(routes.send_displs), asked.data(),
                        std::span<const std::size_t>(asked_counts), std::span<const std::size_t>(asked_displs));
  // The owners gather what was asked of them from their local part.
  std::vector<T> answers, grouped;
  detail::agreed_step(t, op, "local gather", [&] {
    if (!asked.empty()) {
      distributed_vector<T> picked(asked.size(), input.local().group());
      gather(asked, input.local(), picked);
      answers = to_vector(picked);
    }
    grouped.resize(global.size());
  });
  t.comm().all_to_all_v(host_memory, answers.data(), std::span<const std::size_t>(asked_counts),
                        std::span<const std::size_t>(asked_displs), grouped.data(),
                        std::span<const std::size_t>(routes.send_counts),
                        std::span<const std::size_t>(routes.send_displs));
  // Put in order and in place: agreed, so that the call ends alike on every rank.
  detail::agreed_step(t, op, "upload", [&] {
    std::vector<T> result(global.size());
    for (std::size_t j = 0; j < grouped.size(); ++j) result[routes.position[j]] = grouped[j];
    detail::vector_access::upload(output.local(), 0, result.data(), result.size());
  });
}

/// output[map[i]] = input[i] for every global i: map and input on one team with one layout,
/// output on the same team in any layout (std::invalid_argument otherwise); every index in
/// [0, output.size()) (std::out_of_range on every rank otherwise, nothing written). Which of
/// several writes to one element wins is unspecified, as in the single-process scatter.
/// Collective.
template <class T, class I>
void scatter(const team_vector<T>& input, const team_vector<I>& map, team_vector<T>& output) {
  detail::expect_same_team("scatter", map.team(), input.team());
  detail::expect_same_team("scatter", map.team(), output.team());
  MULTIGPU_EXPECTS(map.layout() == input.layout(),
                   detail::concat("scatter: the map and the input are laid out differently over the ranks (sizes ",
                                  map.size(), " and ", input.size(), ")"));
  const team& t = map.team();
  constexpr team_operation op = team_operation::scatter;
  const std::vector<std::uint64_t> global =
      detail::checked_global_indices("scatter", op, sizeof(T), map, output.size());
  // Each rank-local step below is agreed before the next exchange (team.hpp).
  index_routes routes;
  std::vector<T> grouped;
  const auto routed = detail::attempt_step("routes", [&] {
    routes = plan_index_routes(global, output.layout());
    const std::vector<T> values = to_vector(input.local());
    grouped.resize(values.size());
    for (std::size_t j = 0; j < grouped.size(); ++j) grouped[j] = values[routes.position[j]];
  });
  const std::vector<std::size_t> in_counts = detail::requests_to_me(t, op, "routes", routed.failure, routes);
  const std::vector<std::size_t> in_displs = detail::displacements(in_counts);
  const std::size_t arriving = in_displs.back() + in_counts.back();
  std::vector<std::uint64_t> where;
  std::vector<T> what;
  detail::agreed_step(t, op, "allocation", [&] {
    where.resize(arriving);
    what.resize(arriving);
  });
  t.comm().all_to_all_v(host_memory, routes.local_index.data(), std::span<const std::size_t>(routes.send_counts),
                        std::span<const std::size_t>(routes.send_displs), where.data(),
                        std::span<const std::size_t>(in_counts), std::span<const std::size_t>(in_displs));
  t.comm().all_to_all_v(host_memory, grouped.data(), std::span<const std::size_t>(routes.send_counts),
                        std::span<const std::size_t>(routes.send_displs), what.data(),
                        std::span<const std::size_t>(in_counts), std::span<const std::size_t>(in_displs));
  // The owners write what arrived: agreed, so that the call ends alike on every rank.
  detail::agreed_step(t, op, "local scatter", [&] {
    if (arriving == 0) return;
    distributed_vector<T> arrived(arriving, output.local().group());
    detail::vector_access::upload(arrived, 0, what.data(), what.size());
    scatter(arrived, where, output.local());
  });
}

}  // namespace multigpu
