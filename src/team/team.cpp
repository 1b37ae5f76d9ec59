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
  }
  return "an unknown operation";
}

struct team::state {
  std::shared_ptr<communicator> comm;
  std::uint64_t sequence = 0;
};

team::team(std::shared_ptr<communicator> comm) : state_(std::make_shared<state>()) {
  MULTIGPU_EXPECTS(comm != nullptr, "team: the communicator is null");
  state_->comm = std::move(comm);
}

team team::in_process() { return team(std::make_shared<in_process_communicator>()); }

int team::rank() const noexcept { return state_->comm->rank(); }
int team::size() const noexcept { return state_->comm->size(); }
communicator& team::comm() const noexcept { return *state_->comm; }

detail::team_message team::message(team_operation op, std::size_t element_size, bool local_ok) const {
  return {{state_->sequence++, static_cast<std::uint64_t>(op), element_size, local_ok ? 1u : 0u}, {}, 0};
}

int team::exchange(const detail::team_message& mine, std::span<detail::team_message> all) const {
  MULTIGPU_EXPECTS(all.size() == static_cast<std::size_t>(size()),
                   detail::concat("team::exchange: room for ", all.size(), " messages in a team of ", size()));
  state_->comm->all_gather_bytes(&mine, all.data(), sizeof(mine));
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

}  // namespace multigpu
