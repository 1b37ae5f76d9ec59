#pragma once
// Counters of which internal path the library took, for tests and tuning: a test can see
// that a declaration (mg::commutative) or a property of its data (pinned host memory)
// changed what ran, not only that the answer is right. Process-wide, counted with relaxed
// atomics, never reset; read a count before and after the calls of interest. Host-only.

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace multigpu::diagnostics {

enum class path : unsigned {
  ordered_reduce,        ///< a piece reduced by the order-keeping kernel (operator not known commutative)
  pinned_host_upload,    ///< a host-to-devices copy made straight from pinned memory
  pinned_host_download,  ///< a devices-to-host copy made straight into pinned memory
  staged_host_upload,    ///< a host-to-devices copy of pageable memory through the staging workers
  staged_host_download,  ///< a devices-to-host copy into pageable memory through the staging workers
  overlap_staged_copy,   ///< a copy within one vector whose ranges overlap, made through a temporary
  one_launch_reduce,     ///< a small piece of a commutative reduction reduced by one block in one launch
  redistributed_operand, ///< an input on another group or layout copied onto the first input's layout
  redistributed_output,  ///< an output on another group or layout written through a temporary and copied back
};
inline constexpr std::size_t path_count = 9;

namespace detail {
inline std::atomic<std::uint64_t> counters[path_count]{};
}  // namespace detail

/// How many times `p` was taken in this process so far.
inline std::uint64_t count(path p) noexcept {
  return detail::counters[static_cast<std::size_t>(p)].load(std::memory_order_relaxed);
}

/// Records that `p` was taken (called by the library).
inline void note(path p) noexcept {
  detail::counters[static_cast<std::size_t>(p)].fetch_add(1, std::memory_order_relaxed);
}

}  // namespace multigpu::diagnostics
