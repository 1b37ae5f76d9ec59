// The three executors (runtime/detail/executor.hpp): one per dispatch_policy.

#include <multigpu/runtime/detail/executor.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/runtime/detail/graph_replay.hpp>
#include <multigpu/runtime/detail/group_state.hpp>
#include <multigpu/runtime/detail/slot_workers.hpp>

namespace multigpu::detail {

namespace {

/// dispatch_policy::caller_thread: every step on the calling thread, piece by piece, and
/// every collective enqueued as it comes.
class inline_executor : public executor {
 public:
  inline_executor(group_state& group, const std::vector<cudaStream_t>& own) : executor(own), group_(&group) {}

  void for_each(std::span<const piece> pieces, function_ref<void(std::size_t)> step) override {
    if (pieces.empty()) return;
    device_guard guard(group_->device(pieces[0].slot));
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      guard.set(group_->device(pieces[i].slot));
      step(i);
    }
  }

  void collective(const collective_plan&, function_ref<void(const slot_streams&)> enqueue) override {
    enqueue(streams());
  }

 protected:
  group_state* group_;
};

/// dispatch_policy::worker_threads: the steps of several pieces on their slots' worker
/// threads at once (each thread keeps its slot's device current); one piece, and the
/// collectives' own enqueueing, on the calling thread.
class worker_executor final : public inline_executor {
 public:
  worker_executor(group_state& group, const std::vector<cudaStream_t>& own)
      : inline_executor(group, own), workers_(group.devices()) {}

  void for_each(std::span<const piece> pieces, function_ref<void(std::size_t)> step) override {
    if (pieces.size() <= 1) {
      inline_executor::for_each(pieces, step);
      return;
    }
    workers_.run(pieces, step);
  }

 private:
  slot_workers workers_;
};

/// dispatch_policy::graph: steps on the calling thread; a collective that has a fingerprint
/// is captured into a CUDA graph once and replayed (runtime/detail/graph_replay.hpp).
class graph_executor final : public inline_executor {
 public:
  graph_executor(group_state& group, const std::vector<cudaStream_t>& own)
      : inline_executor(group, own), graphs_(group) {}

  void collective(const collective_plan& plan, function_ref<void(const slot_streams&)> enqueue) override {
    if (plan.fingerprint == nullptr) {
      enqueue(streams());
      return;
    }
    graphs_.run(plan, enqueue);
  }
  bool replays() const noexcept override { return true; }
  const graph_replay* graphs() const noexcept override { return &graphs_; }

 private:
  graph_replay graphs_;
};

}  // namespace

std::unique_ptr<executor> make_executor(dispatch_policy policy, group_state& group,
                                        const std::vector<cudaStream_t>& own) {
  switch (policy) {
    case dispatch_policy::worker_threads:
      return std::make_unique<worker_executor>(group, own);
    case dispatch_policy::graph:
      return std::make_unique<graph_executor>(group, own);
    case dispatch_policy::caller_thread:
      break;
  }
  return std::make_unique<inline_executor>(group, own);
}

}  // namespace multigpu::detail
