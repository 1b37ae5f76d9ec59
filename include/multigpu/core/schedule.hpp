#pragma once
// The cross-device schedule as data. Every dependency between streams in this library is a
// pooled event recorded on one stream and waited on by another (core/event_pool.hpp), and every
// unit of device work is enqueued by the executor as a named step on one slot's stream. While a
// schedule_recording is alive, both are written down: work as nodes, stream order and event
// waits as edges. The result is a plain DAG whose critical path (the longest chain of work)
// says how many steps run one after another, whatever the number of slots: the executor's
// promise is that it does not grow with the number of slots.
//
// critical_path() is a pure function, tested on the CPU; the recording is what the GPU tests
// run algorithms under.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace multigpu {

/// One unit of device work: a kernel, a copy, or a library step (a CUB call) on one stream.
struct schedule_node {
  cudaStream_t stream = nullptr;
  std::string label;
};

/// Work nodes and their dependencies; an edge (a, b) means b may start only after a ends.
struct schedule_graph {
  std::vector<schedule_node> nodes;
  std::vector<std::pair<std::size_t, std::size_t>> edges;

  /// Nodes whose label is `label`.
  std::size_t count(const std::string& label) const;
  /// Distinct streams that carry work.
  std::size_t streams() const;
};

/// The number of nodes on the longest chain of dependencies (0 for an empty graph). Throws
/// std::invalid_argument when an edge names a node that does not exist or the edges form a
/// cycle.
std::size_t critical_path(const schedule_graph& graph);

/// Records the schedule of everything the library enqueues, from any thread, while alive.
/// Only one recording may be alive at a time (std::logic_error otherwise).
class schedule_recording {
 public:
  schedule_recording();
  ~schedule_recording();
  schedule_recording(const schedule_recording&) = delete;
  schedule_recording& operator=(const schedule_recording&) = delete;

  /// What was recorded so far.
  schedule_graph graph() const;
  /// Forgets what was recorded so far (streams keep no history).
  void clear();
};

namespace detail {
/// Hooks called by the event pool and the executor; cheap when nothing records.
bool schedule_recording_active() noexcept;
void schedule_note_work(cudaStream_t stream, const char* label);
void schedule_note_record(cudaEvent_t event, cudaStream_t stream);
void schedule_note_wait(cudaStream_t stream, cudaEvent_t event);
}  // namespace detail

}  // namespace multigpu
