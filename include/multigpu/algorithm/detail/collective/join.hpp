#pragma once
// The join collective: every slot's stream waits for everything enqueued so far on every
// other slot's stream (one event recorded per slot, k (k - 1) waits; the host never waits).
// Sort uses it where every slot reads what every other slot wrote: between the split
// search's candidates and their counts, before the receivers read the senders' runs in
// place, and before any slot overwrites its run again.

#include <multigpu/runtime/detail/executor.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace multigpu::detail {

/// Every one of `slots`' streams waits for the work enqueued so far on the others'.
inline void join_streams(const device_group& group, std::span<const std::size_t> slots) {
  executor_of(group).join(slots);
}

/// A join that also happens when an error leaves the scope first: join() on the way that
/// succeeds, the destructor (quietly) otherwise, so that no stream goes on to reuse memory
/// another may still read or write.
class join_slots {
 public:
  join_slots(const device_group& group, std::span<const std::size_t> slots) : group_(group), slots_(slots) {}
  join_slots(const device_group&, std::vector<std::size_t>&&) = delete;  // the slots must outlive it
  join_slots(const join_slots&) = delete;
  join_slots& operator=(const join_slots&) = delete;
  ~join_slots() {
    if (joined_) return;
    try {
      join_streams(group_, slots_);
    } catch (...) {  // the error already leaving the scope is the one to report
    }
  }

  void join() {
    join_streams(group_, slots_);
    joined_ = true;  // only now: after a failure halfway the destructor tries again
  }

 private:
  const device_group& group_;
  std::span<const std::size_t> slots_;
  bool joined_ = false;
};

}  // namespace multigpu::detail
