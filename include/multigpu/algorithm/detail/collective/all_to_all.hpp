#pragma once
// The all-to-all exchange step of sort, gather and scatter: every slot of a group sends one
// contiguous run to every slot (itself included), and every slot receives the runs meant
// for it one after another, in sender order. The plan is pure host arithmetic (tested on
// the CPU); the exchange itself goes through transfer::copy_between, so each (sender,
// receiver) pair takes its route: one copy on a device, a peer copy, or pinned host
// staging. It is stream-ordered on both sides; the host never waits. This is the step an
// executor's all-to-all-v collective (NCCL, MPI) will replace for groups beyond a process.

#include <multigpu/core/error.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/transfer/device_copy.hpp>

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

namespace multigpu::detail {

/// How many elements each slot sends to each slot: counts[s * slots + d] from s to d.
/// Slot s's send buffer holds its runs for d = 0, 1, ... back to back; slot d's receive
/// buffer holds the runs from s = 0, 1, ... back to back.
class exchange_plan {
 public:
  explicit exchange_plan(std::size_t slots) : slots_(slots), counts_(slots * slots, 0) {}

  std::size_t slots() const noexcept { return slots_; }
  std::size_t& count(std::size_t from, std::size_t to) { return counts_[from * slots_ + to]; }
  std::size_t count(std::size_t from, std::size_t to) const { return counts_[from * slots_ + to]; }

  /// Offset of the run for `to` in the send buffer of `from`.
  std::size_t send_offset(std::size_t from, std::size_t to) const {
    std::size_t offset = 0;
    for (std::size_t d = 0; d < to; ++d) offset += count(from, d);
    return offset;
  }
  /// Offset of the run from `from` in the receive buffer of `to`.
  std::size_t receive_offset(std::size_t from, std::size_t to) const {
    std::size_t offset = 0;
    for (std::size_t s = 0; s < from; ++s) offset += count(s, to);
    return offset;
  }
  std::size_t sent(std::size_t from) const { return send_offset(from, slots_); }
  std::size_t received(std::size_t to) const { return receive_offset(slots_, to); }

  /// The reverse exchange: what d received from s goes back from d to s, in the same order.
  exchange_plan transposed() const {
    exchange_plan t(slots_);
    for (std::size_t s = 0; s < slots_; ++s)
      for (std::size_t d = 0; d < slots_; ++d) t.count(d, s) = count(s, d);
    return t;
  }

  /// The exchange that turns a sequence laid out as `from_sizes` (slot s holds the next
  /// from_sizes[s] elements) into the same sequence laid out as `to_sizes`. Both must hold
  /// the same total (std::invalid_argument otherwise).
  static exchange_plan relayout(std::span<const std::size_t> from_sizes, std::span<const std::size_t> to_sizes) {
    MULTIGPU_EXPECTS(from_sizes.size() == to_sizes.size(),
                     concat("exchange_plan::relayout: ", from_sizes.size(), " source slots but ", to_sizes.size(),
                            " destination slots"));
    std::size_t from_total = 0, to_total = 0;
    constexpr const char* too_many = "exchange_plan::relayout: the sizes add up to more than the size type holds";
    for (std::size_t x : from_sizes) from_total = checked_add(from_total, x, too_many);
    for (std::size_t x : to_sizes) to_total = checked_add(to_total, x, too_many);
    MULTIGPU_EXPECTS(from_total == to_total, concat("exchange_plan::relayout: the source holds ", from_total,
                                                    " elements but the destination ", to_total));
    exchange_plan plan(from_sizes.size());
    std::size_t from_begin = 0;
    for (std::size_t s = 0; s < from_sizes.size(); ++s) {
      std::size_t to_begin = 0;
      for (std::size_t d = 0; d < to_sizes.size(); ++d) {
        const std::size_t lo = std::max(from_begin, to_begin);
        const std::size_t hi = std::min(from_begin + from_sizes[s], to_begin + to_sizes[d]);
        plan.count(s, d) = hi > lo ? hi - lo : 0;
        to_begin += to_sizes[d];
      }
      from_begin += from_sizes[s];
    }
    return plan;
  }

  /// One byte move per non-empty run, for elements of `element_bytes` bytes.
  std::vector<transfer::byte_move> moves(std::span<const void* const> send, std::span<void* const> receive,
                                         std::size_t element_bytes) const {
    MULTIGPU_EXPECTS(send.size() == slots_ && receive.size() == slots_,
                     concat("all_to_all: ", slots_, " slots need as many send and receive buffers, got ",
                            send.size(), " and ", receive.size()));
    std::vector<transfer::byte_move> out;
    for (std::size_t s = 0; s < slots_; ++s)
      for (std::size_t d = 0; d < slots_; ++d) {
        const std::size_t n = count(s, d);
        if (n == 0) continue;
        out.push_back({s, static_cast<const std::byte*>(send[s]) + send_offset(s, d) * element_bytes, d,
                       static_cast<std::byte*>(receive[d]) + receive_offset(s, d) * element_bytes,
                       n * element_bytes});
      }
    return out;
  }

 private:
  std::size_t slots_;
  std::vector<std::size_t> counts_;
};

/// Runs the exchange between the slots of `group`: send[s] (on slot s's device) holds
/// plan.sent(s) elements, receive[d] (on slot d's device) room for plan.received(d).
template <class T>
void all_to_all(const device_group& group, const exchange_plan& plan, const std::vector<T*>& send,
                const std::vector<T*>& receive) {
  std::vector<const void*> from(send.begin(), send.end());
  std::vector<void*> to(receive.begin(), receive.end());
  const auto moves = plan.moves(from, to, sizeof(T));
  transfer::copy_between(group, group, moves);
}

}  // namespace multigpu::detail
