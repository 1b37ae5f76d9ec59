#pragma once
// Test-only fault injection: makes the n-th pool allocation or the n-th pinned staging
// acquisition from now on throw multigpu::out_of_memory, or the n-th step run on a slot's
// worker thread (dispatch_policy::worker_threads) throw multigpu::cuda_error, so that tests
// can fail a call in its middle and check that it cleans up. Compiled in only with the CMake option
// MULTIGPU_FAULT_INJECTION (which defines the macro of that name for the library and its
// users); otherwise inject_fault has no effect and fault_injection_available() says false.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace multigpu::testing {

enum class fault_site : unsigned {
  pool_allocation,      ///< device_pool::allocate of one byte or more
  staging_acquisition,  ///< staging_pool::acquire (pinned, mapped host blocks)
  worker_step,          ///< a step run by a slot's worker thread, before it enqueues anything
  count_                ///< the number of sites (not a site)
};

namespace detail {
struct fault_counter {
  std::atomic<std::uint64_t> armed{0};  // 0: off; else the event number that fails
  std::atomic<std::uint64_t> seen{0};   // events since the last inject_fault
};
inline fault_counter fault_counters[static_cast<std::size_t>(fault_site::count_)];
inline fault_counter& counter(fault_site site) noexcept { return fault_counters[static_cast<std::size_t>(site)]; }
}  // namespace detail

/// Whether this build has the hook.
constexpr bool fault_injection_available() noexcept {
#ifdef MULTIGPU_FAULT_INJECTION
  return true;
#else
  return false;
#endif
}

/// Makes the `nth` event at `site` from now on (1 is the next one) throw; 0 turns it off.
/// Also restarts the count that fault_events reads.
inline void inject_fault(fault_site site, std::uint64_t nth) noexcept {
  detail::counter(site).armed.store(0);
  detail::counter(site).seen.store(0);
  detail::counter(site).armed.store(nth);
}

/// Events at `site` since the last inject_fault (counted only where the hook is compiled in).
inline std::uint64_t fault_events(fault_site site) noexcept { return detail::counter(site).seen.load(); }

/// Called by the library at each event: true when this one must fail. Fails once.
inline bool fault_due(fault_site site) noexcept {
  auto& c = detail::counter(site);
  const std::uint64_t n = c.seen.fetch_add(1) + 1;
  std::uint64_t armed = c.armed.load();
  return armed != 0 && n == armed && c.armed.compare_exchange_strong(armed, 0);
}

}  // namespace multigpu::testing
