#pragma once
// The one window tests have into execution. Every unit of device work the library enqueues
// (a CUB call, a kernel of its own, a copy), every event it records or waits on, and every
// point where a call may fail half-way (a pool allocation, a pinned staging acquisition, a
// step on a slot's worker thread) is reported to the installed observer. The library's own
// tests install one to record the cross-device schedule (testing/schedule.hpp) or
// to make the n-th failure point throw (testing/fault_injection.hpp).
//
// The hooks exist only in builds that define MULTIGPU_TESTING, which the internal target
// multigpu_testing does for the library and its tests; the library that is installed and
// linked by applications is built without it, and there each hook is an empty inline
// function: nothing is compiled in, nothing is checked at run time.

#include <cuda_runtime_api.h>

namespace multigpu {

/// The points where a call can fail half-way, as tests make them fail.
enum class fault_site : unsigned {
  pool_allocation,      ///< device_pool::allocate of one byte or more
  staging_acquisition,  ///< staging_pool::acquire (pinned, mapped host blocks)
  worker_step,          ///< a step run by a slot's worker thread, before it enqueues anything
  team_step,            ///< a rank-local step of a team call (team_vector.hpp), before it runs
  count_                ///< the number of sites (not a site)
};

/// What the library reports while it executes. Called from any thread; an implementation
/// synchronises itself. The defaults ignore everything.
class execution_observer {
 public:
  virtual ~execution_observer() = default;
  /// One unit of device work named `label` was enqueued on `stream`.
  virtual void work(cudaStream_t /*stream*/, const char* /*label*/) {}
  /// `event` was recorded on `stream`.
  virtual void record(cudaEvent_t /*event*/, cudaStream_t /*stream*/) {}
  /// `stream` was made to wait for `event`.
  virtual void wait(cudaStream_t /*stream*/, cudaEvent_t /*event*/) {}
  /// The library reached a failure point at `site`: true makes it fail there.
  virtual bool fail(fault_site /*site*/) { return false; }
};

namespace detail {

#ifdef MULTIGPU_TESTING
// Defined in src/testing/observer.cpp: each calls the installed observer, if any, under a
// shared lock, so that an observer is never called after it was removed.
void observe_work(cudaStream_t stream, const char* label);
void observe_record(cudaEvent_t event, cudaStream_t stream);
void observe_wait(cudaStream_t stream, cudaEvent_t event);
bool fault_due(fault_site site);
#else
constexpr void observe_work(cudaStream_t, const char*) noexcept {}
constexpr void observe_record(cudaEvent_t, cudaStream_t) noexcept {}
constexpr void observe_wait(cudaStream_t, cudaEvent_t) noexcept {}
constexpr bool fault_due(fault_site) noexcept { return false; }
#endif

}  // namespace detail
}  // namespace multigpu
