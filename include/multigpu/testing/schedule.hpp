#pragma once
// The cross-device schedule as data, for the library's tests. Every dependency between streams
// in this library is a pooled event recorded on one stream and waited on by another
// (core/event_pool.hpp), and every unit of device work is enqueued by the executor as a named
// step on one slot's stream; both are reported to the execution observer (core/observer.hpp).
// While a schedule_recording (an observer) is alive, both are written down: work as nodes, stream order and event
// waits as edges. The result is a plain DAG whose critical path (the longest chain of work)
// says how many steps run one after another, whatever the number of slots: the executor's
// promise is that it does not grow with the number of slots.
//
// critical_path() is a pure function, tested on the CPU; the recording is what the GPU tests
// run algorithms under.

#include <multigpu/testing/observer.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace multigpu::testing {

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
/// It is the installed observer while alive: std::logic_error when another observer is.
class schedule_recording final : public execution_observer {
 public:
  schedule_recording();
  ~schedule_recording() override;
  schedule_recording(const schedule_recording&) = delete;
  schedule_recording& operator=(const schedule_recording&) = delete;

  /// What was recorded so far.
  schedule_graph graph() const;
  /// Forgets what was recorded so far (streams keep no history).
  void clear();

  void work(cudaStream_t stream, const char* label) override;
  void record(cudaEvent_t event, cudaStream_t stream) override;
  void wait(cudaStream_t stream, cudaEvent_t event) override;

 private:
  struct state;
  std::unique_ptr<state> state_;
};

}  // namespace multigpu::testing
