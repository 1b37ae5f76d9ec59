#include <multigpu/runtime/detail/graph_replay.hpp>

#include <multigpu/core/capture.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include <algorithm>
#include <utility>

namespace multigpu::detail {

namespace {

constexpr std::size_t cache_entries = 64;
constexpr std::size_t variants_per_call = 4;

/// True on the thread that is capturing a collective: the allocators below a step, however
/// deep, refuse to allocate (core/capture.hpp). Only this flag is per thread; the streams are
/// handed to the enqueueing code.
thread_local bool capturing_collective = false;

/// Marks this thread as capturing until the end of the scope, whatever happens.
class capture_scope {
 public:
  capture_scope() noexcept { capturing_collective = true; }
  ~capture_scope() { capturing_collective = false; }
  capture_scope(const capture_scope&) = delete;
  capture_scope& operator=(const capture_scope&) = delete;
};

/// The node nothing depends on: where a captured reduction ends (its fold on the root).
cudaGraphNode_t sink_kernel(cudaGraph_t graph) {
  std::size_t count = 0;
  MULTIGPU_CUDA_TRY(cudaGraphGetNodes(graph, nullptr, &count));
  std::vector<cudaGraphNode_t> nodes(count);
  MULTIGPU_CUDA_TRY(cudaGraphGetNodes(graph, nodes.data(), &count));
  cudaGraphNode_t sink = nullptr;
  for (cudaGraphNode_t node : nodes) {
    std::size_t out = 0;
    MULTIGPU_CUDA_TRY(cudaGraphNodeGetDependentNodes(node, nullptr, nullptr, &out));
    if (out != 0) continue;
    cudaGraphNodeType type{};
    MULTIGPU_CUDA_TRY(cudaGraphNodeGetType(node, &type));
    if (type != cudaGraphNodeTypeKernel || sink != nullptr) return nullptr;  // not one kernel: no replay
    sink = node;
  }
  return sink;
}

}  // namespace

void refuse_during_capture(bool permanent) {
  if (capturing_collective) throw capture_miss(permanent);
}

struct graph_replay::entry {
  const void* site = nullptr;
  std::vector<piece> pieces;
  call_fingerprint fingerprint;
  std::uint64_t generation = 0;
  cudaGraph_t graph = nullptr;  // the graph `exec` was instantiated from (its nodes name exec's)
  cudaGraphExec_t exec = nullptr;
  cudaGraphNode_t result = nullptr;  // the final kernel of a reduction, in `graph`
  dim3 result_grid, result_block;  // its launch shape as captured
  unsigned result_shared = 0;
  std::uint64_t last_used = 0;
  bool eager_only = false;

  /// Takes the launch shape of `node` (the result kernel of a capture) for the patches of
  /// later replays; false when there is no such kernel or its parameters cannot be read.
  bool read_launch_shape(cudaGraphNode_t node) noexcept {
    cudaKernelNodeParams captured{};
    if (node == nullptr || cudaGraphKernelNodeGetParams(node, &captured) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    result_grid = captured.gridDim;
    result_block = captured.blockDim;
    result_shared = captured.sharedMemBytes;
    return true;
  }

  void reset() noexcept {
    if (exec != nullptr) MULTIGPU_CUDA_REPORT(cudaGraphExecDestroy(exec));
    if (graph != nullptr) MULTIGPU_CUDA_REPORT(cudaGraphDestroy(graph));
    exec = nullptr;
    graph = nullptr;
    result = nullptr;
  }
  ~entry() { reset(); }
};

graph_replay::graph_replay(group_resources& group, const slot_streams& own) : group_(&group), own_(own) {}

graph_replay::~graph_replay() {
  // Launches may still run: the graphs go after the slots' streams are done.
  for (std::size_t s = 0; s < group_->size(); ++s) {
    const quiet_device_guard guard(group_->device(s));
    if (guard.ok()) MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(group_->stream(s)));
  }
  entries_.clear();
  renew_capture_streams();  // destroys them; none is made again
}

/// The entry to replay as is, or null; `eager_only` when calls of this site and pieces
/// allocate every time.
graph_replay::entry* graph_replay::find(const void* site, std::span<const piece> pieces,
                                        const call_fingerprint& fingerprint, bool needs_result, bool& eager_only) {
  const std::uint64_t generation = group_->scratch().generation();
  eager_only = false;
  for (auto& e : entries_) {
    if (e->site != site || !std::ranges::equal(e->pieces, pieces)) continue;
    if (e->eager_only) {
      eager_only = true;
      return nullptr;
    }
    if (e->exec != nullptr && e->generation == generation && e->fingerprint == fingerprint &&
        (!needs_result || e->result != nullptr)) {
      e->last_used = ++clock_;
      return e.get();
    }
  }
  return nullptr;
}

/// The entry a new capture goes to: a fresh one while this site and pieces have fewer than
/// `variants`, else the least recently used of theirs (updated in place); the cache's least
/// recently used entry makes room when it is full.
graph_replay::entry& graph_replay::make_room(const void* site, std::span<const piece> pieces,
                                             const call_fingerprint& fingerprint) {
  entry* oldest_variant = nullptr;
  std::size_t variants = 0;
  for (auto& e : entries_) {
    if (e->site != site || !std::ranges::equal(e->pieces, pieces)) continue;
    if (e->fingerprint == fingerprint) {  // the same call, captured before the scratch moved
      e->last_used = ++clock_;
      return *e;
    }
    ++variants;
    if (oldest_variant == nullptr || e->last_used < oldest_variant->last_used) oldest_variant = e.get();
  }
  entry* e = oldest_variant;
  if (variants < variants_per_call) {
    if (entries_.size() < cache_entries) {
      entries_.push_back(std::make_unique<entry>());
      e = entries_.back().get();
    } else {
      auto victim = std::min_element(entries_.begin(), entries_.end(),
                                     [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
      *victim = std::make_unique<entry>();  // a graph still running is freed when it is done
      e = victim->get();
    }
    e->site = site;
    e->pieces.assign(pieces.begin(), pieces.end());
  }
  e->last_used = ++clock_;
  return *e;
}

void graph_replay::ensure_capture_streams() {
  if (!capture_streams_.empty()) return;
  const std::size_t n = group_->size();
  std::vector<cudaStream_t> made(n, nullptr);
  try {
    for (std::size_t s = 0; s < n; ++s) {
      for (std::size_t t = 0; t < s; ++t)
        if (group_->stream(t) == group_->stream(s)) made[s] = made[t];
      if (made[s] != nullptr) continue;
      device_guard guard(group_->device(s));
      MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&made[s], cudaStreamNonBlocking));
    }
  } catch (...) {
    capture_streams_ = std::move(made);
    renew_capture_streams();
    throw;
  }
  capture_streams_ = std::move(made);
}

/// After a failed capture a capture stream may be left in capture mode: destroy them all (each
/// shared stream once); ensure_capture_streams() makes new ones when next needed.
void graph_replay::renew_capture_streams() noexcept {
  std::vector<cudaStream_t> old = std::move(capture_streams_);
  capture_streams_.clear();
  for (std::size_t s = 0; s < old.size(); ++s) {
    if (old[s] == nullptr) continue;
    bool first = true;
    for (std::size_t t = 0; t < s; ++t) first = first && old[t] != old[s];
    if (!first) continue;
    const detail::quiet_device_guard guard(group_->device(s));
    if (guard.ok()) (void)cudaStreamDestroy(old[s]);
  }
  (void)cudaGetLastError();
}

void graph_replay::launch(entry& e, std::size_t root) {
  MULTIGPU_CUDA_TRY(cudaGraphLaunch(e.exec, group_->stream(root)));
}

void graph_replay::run(const collective_plan& plan, function_ref<void(const slot_streams&)> enqueue) {
  group_resources& g = *group_;
  collective_sync& sync = g.sync();
  const void* site = plan.site;
  const std::span<const piece> pieces = plan.pieces;
  const call_fingerprint& fingerprint = *plan.fingerprint;
  const result_kernel* result = plan.result;
  const slot_streams& own = own_;
  MULTIGPU_EXPECTS(!pieces.empty(), "graph replay: a collective needs at least one piece");
  if (!fingerprint.valid()) {
    // Its values do not fit the fingerprint (a 1 KiB init, an operator that is not trivially
    // copyable): no later call can be shown to match, so a capture would never be replayed.
    // Capturing and updating every time costs more than running eagerly, and the entries it
    // would take push out graphs that do replay.
    enqueue(own);
    ++stats_.eager;
    return;
  }
  const std::size_t root = pieces[0].slot;
  device_guard guard(g.device(root));
  const std::uint64_t generation = g.scratch().generation();
  bool eager_only = false;
  if (entry* hit = find(site, pieces, fingerprint, result != nullptr, eager_only)) {
    sync.gather(root, pieces);
    guard.set(g.device(root));
    if (result != nullptr) {
      cudaKernelNodeParams params{};
      params.func = result->function;
      params.gridDim = hit->result_grid;
      params.blockDim = hit->result_block;
      params.sharedMemBytes = hit->result_shared;
      params.kernelParams = result->arguments;
      MULTIGPU_CUDA_TRY(cudaGraphExecKernelNodeSetParams(hit->exec, hit->result, &params));
    }
    launch(*hit, root);
    sync.scatter(root, pieces);
    ++stats_.replays;
    return;
  }
  if (eager_only) {
    enqueue(own);
    ++stats_.eager;
    return;
  }

  ensure_capture_streams();
  sync.gather(root, pieces);
  guard.set(g.device(root));
  cudaGraph_t graph = nullptr;
  {
    const cudaStream_t origin = capture_streams_[root];
    MULTIGPU_CUDA_TRY(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
    bool miss = false, always_allocates = false;
    try {
      const capture_scope capturing;
      enqueue(slot_streams(capture_streams_.data(), true));
    } catch (const capture_miss& m) {
      miss = true;
      always_allocates = m.permanent;
    } catch (...) {
      // Nothing of the call was enqueued for real: drop the capture and report the error.
      cudaGraph_t partial = nullptr;
      (void)cudaStreamEndCapture(origin, &partial);
      if (partial != nullptr) (void)cudaGraphDestroy(partial);
      renew_capture_streams();
      sync.rerecord_quietly(root, pieces);
      throw;
    }
    const cudaError_t ended = cudaStreamEndCapture(origin, &graph);
    if (miss || ended != cudaSuccess) {
      if (graph != nullptr) (void)cudaGraphDestroy(graph);
      if (ended != cudaSuccess) renew_capture_streams();  // a capture that ended cleanly leaves them usable
      sync.rerecord(root, pieces, true);
      if (!miss) throw_cuda_error(ended, "cudaStreamEndCapture", __FILE__, __LINE__);
      if (always_allocates) {
        entry& never = make_room(site, pieces, fingerprint);
        never.reset();  // a graph it held is never launched again
        never.eager_only = true;
      }
      // The scratch must grow, or the call allocates: run it as it is, on the real streams.
      guard.set(g.device(root));
      enqueue(own);
      ++stats_.eager;
      return;
    }
  }

  entry& e = make_room(site, pieces, fingerprint);
  try {
    bool updated = false;
    if (e.exec != nullptr) {
      cudaGraphExecUpdateResultInfo info{};
      if (cudaGraphExecUpdate(e.exec, graph, &info) == cudaSuccess) {
        updated = true;
        // A replay patches the result kernel with the launch shape it has now: that of this
        // capture, which the update gave the executable graph.
        if (e.result != nullptr && !e.read_launch_shape(sink_kernel(graph))) e.result = nullptr;
        MULTIGPU_CUDA_REPORT(cudaGraphDestroy(graph));  // exec keeps the nodes of the graph it came from
        graph = nullptr;
      } else {
        (void)cudaGetLastError();  // a topology change, not an error: instantiate anew below
        e.reset();
      }
    }
    if (!updated) {
      cudaGraphExec_t exec = nullptr;
      MULTIGPU_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
      e.graph = std::exchange(graph, nullptr);
      e.exec = exec;
      e.result = result != nullptr ? sink_kernel(e.graph) : nullptr;
      // Its shape unknown, an entry is updated by capture, never patched.
      if (e.result != nullptr && !e.read_launch_shape(e.result)) e.result = nullptr;
      ++stats_.instantiations;
    }
  } catch (...) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    e.reset();
    sync.rerecord_quietly(root, pieces);
    throw;
  }
  e.fingerprint = fingerprint;
  e.generation = generation;
  try {
    launch(e, root);
    sync.scatter(root, pieces);
  } catch (...) {
    sync.rerecord_quietly(root, pieces);
    throw;
  }
  // After a graph of several pieces, scatter() recorded the root's fork on its own stream.
  sync.rerecord(root, pieces, pieces.size() == 1);
  ++stats_.captures;
}

}  // namespace multigpu::detail
