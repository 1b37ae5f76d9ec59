#pragma once
// A vector over a team of ranks: each rank holds a local distributed_vector (over its own
// device_group, so a rank may drive several GPUs or slots: hybrid ranks x slots) and knows
// the global layout, an all_gather of the local sizes made at construction. Global index i
// lives on the rank whose [offset, offset + local_size) holds it. Host code only; the team
// algorithms are in team_algorithms.hpp.
//
// Construction is collective (see team.hpp): every rank of the team constructs its part of
// the same vector at the same point.

#include <multigpu/team/team.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/observer.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {
namespace detail {

/// Where a test's fault_injection armed fault_site::team_step, the rank-local step named
/// `step` throws multigpu::out_of_memory before it runs (core/observer.hpp; nothing outside
/// the library's own test builds).
inline void team_fault_point(const char* step) {
  if (fault_due(fault_site::team_step))
    throw out_of_memory(-1, 0, 0, concat("multigpu: injected fault in the ", step, " step of a team call"));
}

/// What a rank-local step of a team call left: its value (none when it failed or returns
/// nothing) and its exception (none when it succeeded). take() hands the value over.
template <class R>
struct step_outcome {
  std::optional<std::conditional_t<std::is_void_v<R>, int, R>> value;
  std::exception_ptr failure;
  auto take() {
    if constexpr (!std::is_void_v<R>) return std::move(*value);
  }
};

/// Runs the rank-local step `name` (after its fault point) and keeps what it returned or threw:
/// a step's failure must reach the next agreement, not leave the rank.
template <class F>
auto attempt_step(const char* name, F&& step) {
  using result = std::invoke_result_t<F&>;
  step_outcome<result> out;
  try {
    team_fault_point(name);
    if constexpr (std::is_void_v<result>) {
      step();
      out.value.emplace(0);
    } else {
      out.value.emplace(step());
    }
  } catch (...) {
    out.failure = std::current_exception();
  }
  return out;
}

/// A rank-local step between two exchanges of a team call: runs `step()` and agrees with
/// every rank whether each step succeeded (agree, team.hpp: one all_reduce) before the next
/// exchange, so that a step that fails on one rank ends the call on every rank. Returns what
/// `step()` returned.
template <class F>
auto agreed_step(const team& t, team_operation op, const char* name, F&& step) {
  auto out = attempt_step(name, step);
  agree(t, op, name, out.failure);
  return out.take();
}

/// An all_gather of `bytes` from every rank that also agrees on a step that came before it
/// (`failure`, from the step named `step`): each rank's status word travels in front of its
/// bytes, so the agreement costs no message of its own. recv holds size() * bytes.
inline void agreed_all_gather(const team& t, team_operation op, const char* step, const std::exception_ptr& failure,
                              const void* send, void* recv, std::size_t bytes) {
  const std::size_t ranks = static_cast<std::size_t>(t.size());
  const std::size_t stride = sizeof(std::uint64_t) + bytes;
  std::vector<std::byte> mine(stride), all(stride * ranks);
  const std::uint64_t status = step_status(t, failure);
  std::memcpy(mine.data(), &status, sizeof status);
  if (!failure && bytes > 0) std::memcpy(mine.data() + sizeof status, send, bytes);
  t.comm().all_gather_bytes(host_memory, mine.data(), all.data(), stride);
  std::vector<std::uint64_t> statuses(ranks);
  for (std::size_t r = 0; r < ranks; ++r) std::memcpy(&statuses[r], all.data() + r * stride, sizeof(std::uint64_t));
  settle_statuses(t, op, step, failure, statuses);
  auto* out = static_cast<std::byte*>(recv);
  for (std::size_t r = 0; r < ranks; ++r)
    if (bytes > 0) std::memcpy(out + r * bytes, all.data() + r * stride + sizeof(std::uint64_t), bytes);
}

/// Runs a collective team operation's local step, then enters the collective (team::enter)
/// with whether it succeeded. A rank whose local step threw rethrows it; every other rank
/// gets comm_error naming that rank, instead of waiting for it forever.
template <class F>
auto run_collective(const team& t, team_operation op, std::size_t element_size, F&& local) {
  auto out = attempt_step("local", local);
  rethrow_entry(t, op, out.failure, t.enter(op, element_size, out.failure == nullptr));
  return out.take();
}

/// Whether a bulk exchange of these local parts goes straight from device memory: every part
/// is one slot (contiguous on one device) on a device whose memory the communicator takes, and
/// the team's exchange_path asks for the device path (device), or the largest part is larger
/// than the team's device_exchange_threshold() bytes (automatic).
template <class... T>
bool exchange_on_device(const team& t, const distributed_vector<T>&... parts) {
  if (t.exchange() == exchange_path::host) return false;
  const bool possible =
      ((parts.group().size() == 1 && t.comm().accepts_device_buffers(parts.group().device(0))) && ...);
  if (!possible) return false;
  if (t.exchange() == exchange_path::device) return true;
  const std::size_t largest = std::max({std::size_t{0}, parts.size() * sizeof(T)...});
  return largest > t.device_exchange_threshold();
}

/// The elements of a one-slot vector, on its device (nullptr when it holds none).
template <class T>
T* one_slot_data(distributed_vector<T>& v) {
  return v.empty() ? nullptr : v.segment(0).data();
}
template <class T>
const T* one_slot_data(const distributed_vector<T>& v) {
  return v.empty() ? nullptr : v.segment(0).data();
}

/// A collective team operation whose ranks exchange a small result of fixed size: runs this
/// rank's local step (`local()` returns std::optional<R>), then one all_gather that carries
/// each rank's stamp (team.hpp) and result together (a second one after the stamps for a
/// result over team_message::capacity bytes), and returns every rank's result in rank order.
/// A rank whose local step threw rethrows it; every other rank gets comm_error naming that
/// rank; a rank that entered another collective gives comm_error on every rank.
template <class R, class F>
std::vector<std::optional<R>> gather_collective(const team& t, team_operation op, std::size_t element_size,
                                                F&& local) {
  static_assert(std::is_trivially_copyable_v<R>);
  constexpr bool rides_along = sizeof(R) <= team_message::capacity;
  auto outcome = attempt_step("local", local);
  const std::exception_ptr failure = outcome.failure;
  const std::optional<R> mine = outcome.value ? *outcome.value : std::optional<R>{};
  const std::size_t ranks = static_cast<std::size_t>(t.size());
  team_message out = t.message(op, element_size, failure == nullptr);
  if constexpr (rides_along) {
    if (mine) {
      std::memcpy(out.value.data(), &*mine, sizeof(R));
      out.has_value = 1;
    }
  }
  std::vector<team_message> all(ranks);
  rethrow_entry(t, op, failure, t.exchange(out, all));
  std::vector<std::optional<R>> values(ranks);
  using raw = std::array<std::byte, sizeof(R)>;
  auto unpack = [](const std::byte* p) {
    raw bytes;
    std::memcpy(bytes.data(), p, sizeof(R));
    return std::bit_cast<R>(bytes);
  };
  if constexpr (rides_along) {
    for (std::size_t r = 0; r < ranks; ++r)
      if (all[r].has_value) values[r] = unpack(all[r].value.data());
  } else {
    constexpr std::size_t bytes = sizeof(R) + 1;  // the value and whether there is one
    std::vector<std::byte> box(bytes), boxes(bytes * ranks);
    if (mine) {
      std::memcpy(box.data(), &*mine, sizeof(R));
      box[sizeof(R)] = std::byte{1};
    }
    t.comm().all_gather_bytes(host_memory, box.data(), boxes.data(), bytes);
    for (std::size_t r = 0; r < ranks; ++r)
      if (boxes[r * bytes + sizeof(R)] == std::byte{1}) values[r] = unpack(boxes.data() + r * bytes);
  }
  return values;
}

/// Builds a team_vector around a local vector and a rank layout that the caller has already
/// agreed on with every rank (in its collective's one message): no further collective.
template <class T>
struct team_vector_access;

}  // namespace detail

template <class T>
class team_vector {
 public:
  using value_type = T;
  using size_type = std::size_t;

  /// Collective. `local_size` value-initialised elements on this rank (ranks may hold
  /// different sizes, 0 included), over `group`. A halo of `overlap.width` elements on each
  /// side of the rank's local segments is refreshed across ranks by exchange_halos; all
  /// ranks must pass the same halo (std::invalid_argument on every rank otherwise).
  team_vector(multigpu::team t, size_type local_size, device_group group = default_group(),
              multigpu::halo overlap = {})
      : team_vector(std::move(t), local_size, no_global, std::move(group), overlap) {}

  /// Collective. `global_size` elements in blocks over the ranks (as distribution::block);
  /// every rank must pass the same global_size (std::invalid_argument on every rank otherwise).
  static team_vector block(multigpu::team t, size_type global_size, device_group group = default_group(),
                           multigpu::halo overlap = {}) {
    const distribution blocks = distribution::block(global_size, static_cast<std::size_t>(t.size()));
    const size_type mine = blocks.segment_size(static_cast<std::size_t>(t.rank()));
    return team_vector(std::move(t), mine, global_size, std::move(group), overlap);
  }

  const multigpu::team& team() const noexcept { return team_; }
  int rank() const noexcept { return team_.rank(); }
  /// The global number of elements.
  size_type size() const noexcept { return ranks_.size(); }
  bool empty() const noexcept { return size() == 0; }
  /// Where each rank's part starts and ends in the global index space (one segment per rank).
  const distribution& layout() const noexcept { return ranks_; }
  /// Global index of this rank's first element.
  size_type offset() const { return ranks_.segment_offset(static_cast<std::size_t>(rank())); }
  size_type local_size() const noexcept { return local_.size(); }
  /// The team-wide halo (the local vector's own halo wraps around only in a team of one).
  multigpu::halo halo() const noexcept { return halo_; }

  /// This rank's elements: local index i is global index offset() + i. Use any single-
  /// process algorithm on it; it must keep its size.
  distributed_vector<T>& local() noexcept { return local_; }
  const distributed_vector<T>& local() const noexcept { return local_; }
  /// This rank's segments (their offset() is local; add offset() for the global index).
  auto segments() { return local_.segments(); }
  auto segments() const { return local_.segments(); }

 private:
  static constexpr size_type no_global = ~size_type{0};

  team_vector(multigpu::team t, size_type local_size, size_type global_size, device_group group,
              multigpu::halo overlap)
      : team_(std::move(t)),
        halo_(overlap),
        local_(detail::run_collective(team_, team_operation::construct, sizeof(T), [&] {
          // The local halo wraps around only when this rank is the whole team.
          return distributed_vector<T>(local_size, multigpu::halo{overlap.width, overlap.periodic && team_.size() == 1},
                                       std::move(group));
        })) {
    const std::array<std::uint64_t, 4> mine{local_size, global_size, overlap.width, overlap.periodic ? 1u : 0u};
    const std::vector<std::array<std::uint64_t, 4>> all = team_.comm().all_gather(mine);
    std::vector<std::size_t> sizes(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
      MULTIGPU_EXPECTS(all[r][1] == all[0][1],
                       detail::concat("team_vector::block: rank 0 asked for ", all[0][1], " elements but rank ", r,
                                      " for ", all[r][1]));
      MULTIGPU_EXPECTS(all[r][2] == all[0][2] && all[r][3] == all[0][3],
                       detail::concat("team_vector: rank ", r, " asked for a halo of width ", all[r][2],
                                      all[r][3] ? " (periodic)" : "", " but rank 0 for width ", all[0][2],
                                      all[0][3] ? " (periodic)" : ""));
      sizes[r] = static_cast<std::size_t>(all[r][0]);
    }
    ranks_ = distribution::from_sizes(sizes);
  }

  friend struct detail::team_vector_access<T>;
  team_vector(multigpu::team t, distributed_vector<T> local, distribution ranks)
      : team_(std::move(t)), halo_{}, local_(std::move(local)), ranks_(std::move(ranks)) {}

  multigpu::team team_;
  multigpu::halo halo_;
  distributed_vector<T> local_;
  distribution ranks_;
};

namespace detail {
template <class T>
struct team_vector_access {
  static team_vector<T> adopt(team t, distributed_vector<T> local, distribution ranks) {
    return team_vector<T>(std::move(t), std::move(local), std::move(ranks));
  }
};
}  // namespace detail

}  // namespace multigpu
