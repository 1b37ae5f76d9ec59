// The three executors (runtime/detail/executor.hpp): one per dispatch_policy.

#include <multigpu/runtime/detail/executor.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/runtime/detail/graph_replay.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/detail/slot_workers.hpp>

namespace multigpu::detail {

executor::executor(std::shared_ptr<group_resources> resources)
    : resources_(std::move(resources)), own_(resources_->streams().data(), false),
      devices_(resources_->devices()) {}

staging_pool& executor::staging() const noexcept { return resources_->staging(); }
event_pool& executor::events() const noexcept { return resources_->events(); }
group_scratch& executor::scratch() const noexcept { return resources_->scratch(); }
merge_route executor::merge(merge_kind kind) const noexcept { return resources_->merge(kind); }
collective_sync& executor::sync() const noexcept { return resources_->sync(); }
void executor::join_readers(std::size_t root) const { resources_->sync().join_readers(root); }
void executor::join(std::span<const std::size_t> slots) const { resources_->join(slots); }

void executor::for_each(std::span<const piece> pieces, const slot_streams& streams,
                        function_ref<void(const piece_context&)> step) {
  if (pieces.empty()) return;
  group_resources& g = *resources_;
  auto run = [&](std::size_t i) {
    const piece& p = pieces[i];
    const nvtx_range local("local step", p.slot);
    const piece_context ctx{i, p.slot, g.device(p.slot), streams[p.slot], &g.pool(p.slot), p.count,
                            &g.scratch().slot(p.slot)};
    step(ctx);
    observe_work(ctx.stream, "step");
  };
  run_pieces(pieces, run);
}

void executor::run_pieces(std::span<const piece> pieces, function_ref<void(std::size_t)> run) {
  device_guard guard(resources_->device(pieces[0].slot));
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    guard.set(resources_->device(pieces[i].slot));
    run(i);
  }
}

namespace {

/// dispatch_policy::caller_thread: every step on the calling thread, piece by piece, and
/// every collective enqueued as it comes.
class inline_executor : public executor {
 public:
  explicit inline_executor(std::shared_ptr<group_resources> resources) : executor(std::move(resources)) {}

  void collective(const collective_plan&, function_ref<void(const slot_streams&)> enqueue) override {
    enqueue(streams());
  }
};

/// dispatch_policy::worker_threads: the steps of several pieces on their slots' worker
/// threads at once (each thread keeps its slot's device current); one piece, and the
/// collectives' own enqueueing, on the calling thread.
class worker_executor final : public inline_executor {
 public:
  explicit worker_executor(std::shared_ptr<group_resources> resources)
      : inline_executor(std::move(resources)), workers_(this->resources().devices()) {}

 protected:
  void run_pieces(std::span<const piece> pieces, function_ref<void(std::size_t)> run) override {
    if (pieces.size() <= 1) {
      executor::run_pieces(pieces, run);
      return;
    }
    workers_.run(pieces, run);
  }

 private:
  slot_workers workers_;
};

/// dispatch_policy::graph: steps on the calling thread; a collective that has a fingerprint
/// is captured into a CUDA graph once and replayed (runtime/detail/graph_replay.hpp).
class graph_executor final : public inline_executor {
 public:
  explicit graph_executor(std::shared_ptr<group_resources> resources)
      : inline_executor(std::move(resources)), graphs_(this->resources(), streams()) {}

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

std::shared_ptr<executor> make_executor(dispatch_policy policy, std::shared_ptr<group_resources> resources) {
  switch (policy) {
    case dispatch_policy::worker_threads:
      return std::make_shared<worker_executor>(std::move(resources));
    case dispatch_policy::graph:
      return std::make_shared<graph_executor>(std::move(resources));
    case dispatch_policy::caller_thread:
      break;
  }
  return std::make_shared<inline_executor>(std::move(resources));
}

}  // namespace multigpu::detail
