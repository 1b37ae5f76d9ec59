#pragma once
// While a collective is being captured into a CUDA graph (dispatch_policy::graph, see
// runtime/detail/executor.hpp), nothing may allocate: an allocation on a capturing stream
// would become a node of the graph, replayed on every launch. Allocators call
// refuse_during_capture() first; the capture is then abandoned and the call runs eagerly.

#include <stdexcept>

namespace multigpu::detail {

/// Thrown inside a capture by a step that needs to allocate. `permanent`: the call always
/// allocates (a pool or staging allocation), so it is never captured again; otherwise (the
/// executor's scratch must grow) the next call captures anew. Never reaches users.
struct capture_miss : std::logic_error {
  bool permanent;
  explicit capture_miss(bool permanent_)
      : std::logic_error("multigpu: an allocation inside a graph capture (internal)"), permanent(permanent_) {}
};

/// Throws capture_miss on the thread that is capturing a collective; does nothing elsewhere
/// (src/runtime/graph_replay.cpp).
void refuse_during_capture(bool permanent);

}  // namespace multigpu::detail
