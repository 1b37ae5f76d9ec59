#pragma once
// Fault injection, an execution observer for tests: makes the n-th pool allocation or the
// n-th pinned staging acquisition from now on throw multigpu::out_of_memory, the n-th
// step run on a slot's worker thread (dispatch_policy::worker_threads) throw
// multigpu::cuda_error, or the n-th rank-local step of a team call throw
// multigpu::out_of_memory on this rank, so that a test can fail a call in its middle and
// check that it cleans up (and, for a team, that every rank ends the call).

#include <multigpu/testing/observer.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace multigpu::testing {

class fault_injection final : public execution_observer {
 public:
  /// Installed while alive (std::logic_error when another observer is).
  fault_injection() { install_observer(*this); }
  ~fault_injection() override { remove_observer(*this); }
  fault_injection(const fault_injection&) = delete;
  fault_injection& operator=(const fault_injection&) = delete;

  /// Makes the `nth` event at `site` from now on (1 is the next one) fail; 0 turns it off.
  /// Also restarts the count that events() reads.
  void arm(fault_site site, std::uint64_t nth) noexcept {
    counter& c = counters_[index(site)];
    c.armed.store(0);
    c.seen.store(0);
    c.armed.store(nth);
  }
  /// Events at `site` since the last arm().
  std::uint64_t events(fault_site site) const noexcept { return counters_[index(site)].seen.load(); }

  /// Fails once, at the armed event.
  bool fail(fault_site site) override {
    counter& c = counters_[index(site)];
    const std::uint64_t n = c.seen.fetch_add(1) + 1;
    std::uint64_t armed = c.armed.load();
    return armed != 0 && n == armed && c.armed.compare_exchange_strong(armed, 0);
  }

 private:
  struct counter {
    std::atomic<std::uint64_t> armed{0};  // 0: off; else the event number that fails
    std::atomic<std::uint64_t> seen{0};   // events since the last arm()
  };
  static constexpr std::size_t index(fault_site site) noexcept { return static_cast<std::size_t>(site); }
  counter counters_[static_cast<std::size_t>(fault_site::count_)];
};

}  // namespace multigpu::testing
