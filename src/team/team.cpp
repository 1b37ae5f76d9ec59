#include <multigpu/team/team.hpp>
#include <multigpu/team/team_plan.hpp>

#include <multigpu/comm/in_process_communicator.hpp>
#include <multigpu/core/error.hpp>

#include <algorithm>
#include <array>

namespace multigpu {

const char* name_of(team_operation op) noexcept {
  switch (op) {
    case team_operation::construct: return "team_vector construction";
    case team_operation::reduce: return "reduce";
    case team_operation::inclusive_scan: return "inclusive_scan";
    case team_operation::exclusive_scan: return "exclusive_scan";
    case team_operation::count: return "count";
    case team_operation::min_element: return "min_element";
    case team_operation::max_element: return "max_element";
    case team_operation::equal: return "equal";
    case team_operation::to_vector: return "to_vector";
    case team_operation::redistribute: return "redistribute";
    case team_operation::exchange_halos: return "exchange_halos";
    case team_operation::sort: return "sort";
    case team_operation::sort_by_key: return "sort_by_key";
    case team_operation::is_sorted: return "is_sorted";
    case team_operation::lower_bound: return "lower_bound";
    case team_operation::upper_bound: return "upper_bound";
    case team_operation::gather: return "gather";
    case team_operation::scatter: return "scatter";
    case team_operation::copy_if: return "copy_if";
    case team_operation::mdarray_construct: return "team_mdarray construction";
    case team_operation::mdarray_exchange_halos: return "exchange_halos of a team_mdarray";
    case team_operation::mdarray_stencil: return "stencil_transform of a team_mdarray";
    case team_operation::mdarray_reduce: return "reduce of a team_mdarray";
    case team_operation::mdarray_reduce_replicated: return "reduce_replicated of a team_mdarray";
    case team_operation::mdarray_equal: return "equal of team_mdarrays";
    case team_operation::mdarray_to_host: return "team_mdarray::to_host";
    case team_operation::mdarray_copy: return "copy between team_mdarrays";
    case team_operation::mdarray_get: return "team_mdarray::get";
  }
  return "an unknown operation";
}

struct team::state {
  std::shared_ptr<communicator> comm;
  std::uint64_t sequence = 0;
  exchange_path exchange = exchange_path::automatic;
  std::size_t device_exchange_threshold = default_device_exchange_threshold;
};

team::team(std::shared_ptr<communicator> comm) : state_(std::make_shared<state>()) {
  MULTIGPU_EXPECTS(comm != nullptr, "team: the communicator is null");
  state_->comm = std::move(comm);
}

team team::in_process() { return team(std::make_shared<in_process_communicator>()); }

int team::rank() const noexcept { return state_->comm->rank(); }
int team::size() const noexcept { return state_->comm->size(); }
communicator& team::comm() const noexcept { return *state_->comm; }
exchange_path team::exchange() const noexcept { return state_->exchange; }
void team::set_exchange(exchange_path path) noexcept { state_->exchange = path; }
std::size_t team::device_exchange_threshold() const noexcept { return state_->device_exchange_threshold; }
void team::set_device_exchange_threshold(std::size_t bytes) noexcept { state_->device_exchange_threshold = bytes; }

detail::team_message team::message(team_operation op, std::size_t element_size, bool local_ok) const {
  return {{state_->sequence++, static_cast<std::uint64_t>(op), element_size, local_ok ? 1u : 0u}, {}, 0};
}

int team::exchange(const detail::team_message& mine, std::span<detail::team_message> all) const {
  MULTIGPU_EXPECTS(all.size() == static_cast<std::size_t>(size()),
                   detail::concat("team::exchange: room for ", all.size(), " messages in a team of ", size()));
  state_->comm->all_gather_bytes(host_memory, &mine, all.data(), sizeof(mine));
  const auto op = static_cast<team_operation>(mine.stamp[1]);
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& theirs = all[r].stamp;
    if (theirs[0] != mine.stamp[0] || theirs[1] != mine.stamp[1] || theirs[2] != mine.stamp[2]) {
      throw comm_error(detail::concat(
          "multigpu: team collective mismatch: rank ", rank(), " called ", name_of(op), " (element size ",
          mine.stamp[2], ") as collective #", mine.stamp[0], ", but rank ", r, " called ",
          name_of(static_cast<team_operation>(theirs[1])), " (element size ", theirs[2], ") as collective #",
          theirs[0], "; every rank must call the same team operations in the same order"));
    }
  }
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].stamp[3] == 0) return static_cast<int>(r);
  return -1;
}

int team::enter(team_operation op, std::size_t element_size, bool local_ok) const {
  std::vector<detail::team_message> all(static_cast<std::size_t>(size()));
  return exchange(message(op, element_size, local_ok), all);
}

void detail::rethrow_entry(const team& t, team_operation op, const std::exception_ptr& failure, int failed) {
  if (failure) std::rethrow_exception(failure);
  if (failed >= 0)
    throw comm_error(concat("multigpu: ", name_of(op), ": rank ", failed,
                            " failed before the collective (its own exception says why); rank ", t.rank(),
                            " stops too"));
}

namespace detail {
std::uint64_t step_status(const team& t, const std::exception_ptr& failure) noexcept {
  return failure ? static_cast<std::uint64_t>(t.size() - t.rank()) : 0;
}

void settle_statuses(const team& t, team_operation op, const char* step, const std::exception_ptr& failure,
                     std::span<const std::uint64_t> statuses) {
  std::uint64_t worst = 0;
  for (std::uint64_t s : statuses) worst = std::max(worst, s);
  if (failure) std::rethrow_exception(failure);
  if (worst == 0) return;
  const auto failed = static_cast<std::int64_t>(t.size()) - static_cast<std::int64_t>(worst);
  throw comm_error(concat("multigpu: ", name_of(op), ": rank ", failed, " failed in its ", step,
                          " step (its own exception says why); rank ", t.rank(), " stops too"));
}

void agree(const team& t, team_operation op, const char* step, const std::exception_ptr& failure) {
  const std::uint64_t worst = t.comm().all_reduce(step_status(t, failure), reduce_op::max);
  settle_statuses(t, op, step, failure, std::span<const std::uint64_t>(&worst, 1));
}

void expect_same_team(const char* operation, const team& a, const team& b) {
  MULTIGPU_EXPECTS(a.size() == b.size(), concat(operation, ": the vectors' teams have communicators of different sizes (",
                                                a.size(), " and ", b.size(), ")"));
  MULTIGPU_EXPECTS(a == b, concat(operation, ": the vectors belong to different teams"));
}
}  // namespace detail

redistribution_plan plan_redistribution(const distribution& from, const distribution& to, std::size_t rank) {
  MULTIGPU_EXPECTS(from.segment_count() == to.segment_count(),
                   detail::concat("plan_redistribution: layouts over ", from.segment_count(), " and ",
                                  to.segment_count(), " ranks (communicators of different sizes)"));
  MULTIGPU_EXPECTS(from.size() == to.size(), detail::concat("plan_redistribution: the layouts hold ", from.size(),
                                                            " and ", to.size(), " elements"));
  MULTIGPU_EXPECTS(rank < from.segment_count(),
                   detail::concat("plan_redistribution: rank ", rank, " of ", from.segment_count()));
  const std::size_t n = from.segment_count();
  redistribution_plan plan{std::vector<std::size_t>(n, 0), std::vector<std::size_t>(n, 0),
                           std::vector<std::size_t>(n, 0), std::vector<std::size_t>(n, 0)};
  // What this rank holds in `from` goes to the ranks of `to` that cover it, in order.
  const std::size_t my_from = from.segment_offset(rank);
  for (const piece& p : to.split(my_from, my_from + from.segment_size(rank))) {
    plan.send_counts[p.slot] = p.count;
    plan.send_displs[p.slot] = to.segment_offset(p.slot) + p.local_offset - my_from;
  }
  const std::size_t my_to = to.segment_offset(rank);
  for (const piece& p : from.split(my_to, my_to + to.segment_size(rank))) {
    plan.recv_counts[p.slot] = p.count;
    plan.recv_displs[p.slot] = from.segment_offset(p.slot) + p.local_offset - my_to;
  }
  return plan;
}

split_search::split_search(const distribution& layout) {
  const std::size_t ranks = layout.segment_count();
  target_.resize(ranks + 1);
  lo_.assign(ranks + 1, std::vector<std::size_t>(ranks, 0));
  hi_.assign(ranks + 1, std::vector<std::size_t>(ranks, 0));
  splits_.assign(ranks + 1, std::vector<std::size_t>(ranks, 0));
  settled_.assign(ranks + 1, false);
  for (std::size_t b = 0; b <= ranks; ++b) {
    target_[b] = layout.segment_offset(b);
    for (std::size_t r = 0; r < ranks; ++r) hi_[b][r] = layout.segment_size(r);
  }
  splits_[ranks] = hi_[ranks];
  settled_[0] = settled_[ranks] = true;
  for (std::size_t b = 1; b < ranks; ++b) settle_if_closed(b);
}

bool split_search::settled() const noexcept {
  return std::all_of(settled_.begin(), settled_.end(), [](bool s) { return s; });
}

std::vector<std::size_t> split_search::open_boundaries() const {
  std::vector<std::size_t> open;
  for (std::size_t b = 0; b < settled_.size(); ++b)
    if (!settled_[b]) open.push_back(b);
  return open;
}

std::pair<std::size_t, std::size_t> split_search::range(std::size_t b, std::size_t r) const {
  return {lo_.at(b).at(r), hi_.at(b).at(r)};
}

void split_search::settle_if_closed(std::size_t b) {
  std::size_t low = 0, high = 0;
  for (std::size_t r = 0; r < lo_[b].size(); ++r) {
    low += lo_[b][r];
    high += hi_[b][r];
  }
  if (low == target_[b] || high == target_[b]) {
    splits_[b] = low == target_[b] ? lo_[b] : hi_[b];
    settled_[b] = true;
  }
}

void split_search::narrow(std::size_t b, std::span<const pivot_rank> counts) {
  MULTIGPU_EXPECTS(b < settled_.size() && !settled_[b] && counts.size() == lo_[b].size(),
                   detail::concat("split_search::narrow: boundary ", b, " is not open or the counts are for ",
                                  counts.size(), " ranks"));
  const std::size_t ranks = counts.size();
  const std::size_t k = target_[b];
  std::size_t below = 0, through = 0, open_before = 0, open_after = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    below += counts[r].below;
    through += counts[r].through;
    open_before += hi_[b][r] - lo_[b][r];
  }
  if (below < k && k <= through) {
    // The boundary falls among the elements equal to the pivot: they go in rank order.
    std::size_t need = k - below;
    for (std::size_t r = 0; r < ranks; ++r) {
      const std::size_t take = std::min<std::size_t>(counts[r].through - counts[r].below, need);
      splits_[b][r] = counts[r].below + take;
      need -= take;
    }
    settled_[b] = true;
    return;
  }
  for (std::size_t r = 0; r < ranks; ++r) {
    if (below >= k)
      hi_[b][r] = std::min<std::size_t>(hi_[b][r], counts[r].below);
    else
      lo_[b][r] = std::max<std::size_t>(lo_[b][r], counts[r].through);
    lo_[b][r] = std::min(lo_[b][r], hi_[b][r]);
    open_after += hi_[b][r] - lo_[b][r];
  }
  settle_if_closed(b);
  // Every round shrinks the open ranges when the parts are sorted by a strict weak order; a
  // round that does not (keys the comparator cannot order, such as NaN) would never end.
  MULTIGPU_EXPECTS(settled_[b] || open_after < open_before,
                   "sort: the ranks' parts did not split (is the comparator a strict weak order on these keys? NaN "
                   "is not ordered by <)");
}

redistribution_plan plan_sorted_exchange(const split_table& splits, std::size_t rank) {
  MULTIGPU_EXPECTS(splits.size() >= 2 && rank < splits.size() - 1,
                   detail::concat("plan_sorted_exchange: rank ", rank, " of a table for ",
                                  splits.empty() ? 0 : splits.size() - 1, " ranks"));
  const std::size_t ranks = splits.size() - 1;
  redistribution_plan plan;
  plan.send_counts.resize(ranks);
  plan.send_displs.resize(ranks);
  plan.recv_counts.resize(ranks);
  plan.recv_displs.resize(ranks);
  std::size_t received = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    plan.send_displs[r] = splits[r][rank];
    plan.send_counts[r] = splits[r + 1][rank] - splits[r][rank];
    plan.recv_displs[r] = received;
    plan.recv_counts[r] = splits[rank + 1][r] - splits[rank][r];
    received += plan.recv_counts[r];
  }
  return plan;
}

index_routes plan_index_routes(std::span<const std::uint64_t> global, const distribution& owners) {
  const std::size_t ranks = owners.segment_count();
  index_routes routes;
  routes.send_counts.assign(ranks, 0);
  routes.send_displs.assign(ranks, 0);
  std::vector<distribution::location> where(global.size());
  for (std::size_t i = 0; i < global.size(); ++i) {
    where[i] = owners.locate(static_cast<std::size_t>(global[i]));
    ++routes.send_counts[where[i].segment];
  }
  for (std::size_t r = 1; r < ranks; ++r) routes.send_displs[r] = routes.send_displs[r - 1] + routes.send_counts[r - 1];
  routes.local_index.resize(global.size());
  routes.position.resize(global.size());
  std::vector<std::size_t> next = routes.send_displs;
  for (std::size_t i = 0; i < global.size(); ++i) {
    const std::size_t at = next[where[i].segment]++;
    routes.local_index[at] = where[i].local;
    routes.position[at] = i;
  }
  return routes;
}

}  // namespace multigpu
