#pragma once
// A team: the ranks of one communicator that together hold team_vectors. Cheap to copy (a
// shared handle, like device_group); two teams are equal when they are the same handle.
//
// Every rank must call every collective team operation (constructing a team_vector, reduce,
// scans, count, min/max_element, equal, to_vector, redistribute, exchange_halos) in the same
// order with matching arguments. Each such call begins with a cheap check, an all_gather of
// (sequence number, operation, element size, local validity): a rank that calls something
// else gets comm_error on every rank instead of a hang or wrong data, and a precondition that
// fails on one rank only (a too-small local segment for a halo, say) fails on all of them.
//
// Threads: a team's collective operations run one at a time, from one thread per rank (as
// the communicator's calls do).

#include <multigpu/comm/communicator.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace multigpu {

/// The collective team operations, as named in mismatch messages.
enum class team_operation : std::uint32_t {
  construct = 1,
  reduce,
  inclusive_scan,
  exclusive_scan,
  count,
  min_element,
  max_element,
  equal,
  to_vector,
  redistribute,
  exchange_halos,
};

const char* name_of(team_operation op) noexcept;

class team {
 public:
  /// A team over `comm` (shared: the communicator lives as long as any copy of the team).
  explicit team(std::shared_ptr<communicator> comm);
  /// One rank over an in_process_communicator: team code without MPI.
  static team in_process();

  int rank() const noexcept;
  int size() const noexcept;
  communicator& comm() const noexcept;

  /// Collective. Checks that every rank entered the same operation at the same point
  /// (comm_error naming both calls otherwise) and returns the lowest rank whose `local_ok`
  /// is false, or -1 when all are fine.
  int enter(team_operation op, std::size_t element_size, bool local_ok = true) const;

  friend bool operator==(const team& a, const team& b) noexcept { return a.state_ == b.state_; }

 private:
  struct state;
  std::shared_ptr<state> state_;
};

namespace detail {
/// Binary team operations need both operands on one team: std::invalid_argument naming the
/// operation when the communicators differ in size or the teams differ.
void expect_same_team(const char* operation, const team& a, const team& b);
}  // namespace detail

}  // namespace multigpu
