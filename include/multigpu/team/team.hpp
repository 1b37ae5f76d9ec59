#pragma once
// A team: the ranks of one communicator that together hold team_vectors. Cheap to copy (a
// shared handle, like device_group); two teams are equal when they are the same handle.
//
// Every rank must call every collective team operation (constructing a team_vector, reduce,
// scans, count, min/max_element, equal, to_vector, redistribute, exchange_halos, the sorts
// and the searches) in the same order with matching arguments. Every such call carries a
// stamp (sequence number, operation, element size, whether the rank's local step succeeded)
// that every rank checks: a rank that calls something else gets comm_error on every rank
// instead of a hang or wrong data, and a precondition that fails on one rank only (a
// too-small local segment for a halo, say) fails on all of them. Calls whose ranks exchange
// a small fixed-size result (reduce, scans, count, min/max_element, equal, is_sorted, the
// bounds) send the stamp in the same message as the result; the others send it in an
// all_gather of their own before their data.
//
// After the first message, a call may have more rank-local steps between its exchanges (an
// allocation, a local algorithm, reading a part): each is followed by an agreement before the
// next exchange (detail::agreed_step, team_vector.hpp: one all_reduce of a status word, or
// the status carried in the next exchange's own message), so that a step that fails on one
// rank ends the call on every rank: that rank throws its own error, the others comm_error
// naming it and the step. Where a local step follows a call's last exchange (a local sort
// or scan, an upload), it is agreed too, so that a call completes on every rank or throws on
// every rank; the team stays usable either way.
//
// Threads: a team's collective operations run one at a time, from one thread per rank (as
// the communicator's calls do).

#include <multigpu/comm/communicator.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <span>

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
  sort,
  sort_by_key,
  is_sorted,
  lower_bound,
  upper_bound,
  gather,
  scatter,
  copy_if,
  mdarray_construct,
  mdarray_exchange_halos,
  mdarray_stencil,
  mdarray_reduce,
  mdarray_reduce_replicated,
  mdarray_equal,
  mdarray_to_host,
  mdarray_copy,
  mdarray_get,
};

const char* name_of(team_operation op) noexcept;

/// How a team's bulk exchanges (redistribute and the copies and rebalancing built on it, and
/// the sorts) move their data between ranks. The device path needs a communicator that takes
/// device buffers for the part's device (communicator::accepts_device_buffers: NCCL device to
/// device; MPI device to device when CUDA-aware, else through the MPI communicator's reused
/// pinned staging) and local parts of one slot each; where it cannot be taken, every choice
/// goes through host memory.
enum class exchange_path {
  /// The device path for a rank whose part is larger than the team's
  /// device_exchange_threshold() (the bytes of the largest local part the exchange reads or
  /// writes), else the host path. The default.
  automatic,
  /// The device path at every size: device buffers straight to the communicator.
  device,
  /// Always through host memory: each rank copies its part to a host vector, the
  /// communicator moves host buffers, and the result is uploaded.
  host,
};

/// The default of team::device_exchange_threshold(): 4 MiB a rank. Measured with bench_comm's
/// team sort on an H100 with two ranks sharing the GPU: the host path is faster up to 2^20
/// floats a rank (0.95 ms against 6.1 ms at 2^16; 7.6 ms against 8.4 ms at 2^20), the device
/// path from 2^24 (25 ms against 136 ms).
inline constexpr std::size_t default_device_exchange_threshold = std::size_t{4} << 20;

namespace detail {
/// The first message of every team collective, the same size for all of them (so that a rank
/// that entered another collective is caught, not mismatched in size): the stamp (the team's
/// sequence number, the operation, the element size, whether the rank's local step
/// succeeded) and up to `capacity` bytes of the rank's result.
struct team_message {
  static constexpr std::size_t capacity = 64;
  std::array<std::uint64_t, 4> stamp;
  std::array<std::byte, capacity> value;
  std::uint64_t has_value;
};
}  // namespace detail

class team {
 public:
  /// A team over `comm` (shared: the communicator lives as long as any copy of the team).
  explicit team(std::shared_ptr<communicator> comm);
  /// One rank over an in_process_communicator: team code without MPI.
  static team in_process();

  int rank() const noexcept;
  int size() const noexcept;
  communicator& comm() const noexcept;
  /// The path of this team's bulk exchanges (shared by every copy of the team). Ranks may
  /// choose differently: the messages are the same either way.
  exchange_path exchange() const noexcept;
  void set_exchange(exchange_path path) noexcept;
  /// Under exchange_path::automatic, a rank whose part is larger than this many bytes takes
  /// the device path (default_device_exchange_threshold; shared by every copy of the team).
  std::size_t device_exchange_threshold() const noexcept;
  void set_device_exchange_threshold(std::size_t bytes) noexcept;

  /// This rank's first message for its next collective: the stamp (advancing the sequence),
  /// no result.
  detail::team_message message(team_operation op, std::size_t element_size, bool local_ok = true) const;
  /// Collective: sends `mine` (from message()) and receives every rank's, in rank order, into
  /// `all` (size() entries). comm_error naming both calls when a rank entered another
  /// collective; otherwise the lowest rank whose local step failed, or -1 when all are fine.
  int exchange(const detail::team_message& mine, std::span<detail::team_message> all) const;
  /// Collective: exchange() of a message with no result, for operations whose data moves in
  /// messages of other sizes.
  int enter(team_operation op, std::size_t element_size, bool local_ok = true) const;

  friend bool operator==(const team& a, const team& b) noexcept { return a.state_ == b.state_; }

 private:
  struct state;
  std::shared_ptr<state> state_;
};

namespace detail {
/// After exchange(): this rank's own failure rethrown, or comm_error naming the lowest rank
/// whose local step failed (`failed`, -1 when none), so that nobody waits for a rank that
/// already gave up.
void rethrow_entry(const team& t, team_operation op, const std::exception_ptr& failure, int failed);

/// Collective: every rank says whether its step `step` of `op` failed (`failure`); the rank
/// that failed rethrows its own exception, and every other rank throws comm_error naming the
/// lowest failed rank and the step. One all_reduce of one word; returns when none failed.
void agree(const team& t, team_operation op, const char* step, const std::exception_ptr& failure);

/// The status word of a step for an exchange that carries it along (agreed_all_gather): 0
/// when the step succeeded, else a value that orders the ranks so that the lowest failed
/// rank is the largest.
std::uint64_t step_status(const team& t, const std::exception_ptr& failure) noexcept;
/// After an exchange that carried every rank's step_status: as agree() for those words.
void settle_statuses(const team& t, team_operation op, const char* step, const std::exception_ptr& failure,
                     std::span<const std::uint64_t> statuses);

/// Binary team operations need both operands on one team: std::invalid_argument naming the
/// operation when the communicators differ in size or the teams differ.
void expect_same_team(const char* operation, const team& a, const team& b);
}  // namespace detail

}  // namespace multigpu
