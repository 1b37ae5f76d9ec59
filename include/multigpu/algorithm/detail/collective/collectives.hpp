#pragma once
// The collective steps of the executor, in one process: "reduce partials in order" and
// "exclusive scan of partials". An algorithm states its local step per piece and calls one of
// these; the ordering between streams is theirs alone:
// - the local steps of one call never wait for each other: each non-root step waits only for
//   the root's fork event, recorded when the call starts (it orders the reuse of the root's
//   partials arena after the previous call's fold);
// - the root's fold (or carry scan) waits for every local step it consumes;
// - on the error path the root still waits for every step that started, so the arena is
//   never reused under a kernel still writing it.
// Partials meet in the root slot's persistent scratch: device memory (merge_route::device,
// read and written directly or over peer links) or pinned mapped host memory
// (merge_route::host_mapped). Nothing is allocated per call once the scratch has grown.
// Each collective hands its enqueueing to the group's executor (runtime/detail/executor.hpp),
// which runs it on the slots' streams or, under dispatch_policy::graph, captures it into a CUDA
// graph and replays it; the streams to use are handed in, and what a call depends on is
// written into its fingerprint.

#include <multigpu/algorithm/detail/collective/partial_kernels.hpp>
#include <multigpu/algorithm/detail/local/local_reduce.hpp>
#include <multigpu/algorithm/future.hpp>
#include <multigpu/runtime/detail/executor.hpp>

#include <mutex>

namespace multigpu::detail {

/// The partials arena of a collective rooted at `root`, for `bytes`, by the group's merge route
/// for `kind`: the root's device scratch or its pinned mapped host scratch. A device arena
/// that grows is freed on the root's stream, so the root joins the arena's readers first.
inline void* collective_arena(executor& exec, std::size_t root, std::size_t bytes, merge_kind kind) {
  slot_scratch& scratch = exec.scratch().slot(root);
  if (exec.merge(kind) != merge_route::device) return scratch.mapped_partials(bytes);
  exec.join_readers(root);
  return scratch.partials(bytes);
}

/// One collective call over the pieces of a range, enqueued on `streams`: forks the slots from
/// the root, and joins them back on the root, also when unwinding. The caller holds the
/// scratch lock.
class collective_call {
 public:
  template <class T>
  collective_call(const range_ref<T>& range, const slot_streams& streams)
      : exec_(executor_of(range.group())),
        streams_(streams),
        pieces_(range.pieces),
        root_slot_(pieces_[0].slot),
        root_(exec_.scratch().slot(root_slot_)),
        entered_(root_.entered()) {
    entered_.assign(pieces_.size(), 0);
    guard_.emplace(exec_.device(root_slot_));
    // The steps of this call rewrite the arena: the fork follows its earlier readers.
    exec_.join_readers(root_slot_);
    root_.fork().record(root_stream());
  }
  collective_call(const collective_call&) = delete;
  collective_call& operator=(const collective_call&) = delete;

  ~collective_call() {
    // Unwinding: every step that started may have enqueued writes to the arena.
    if (joined_) return;
    try {
      for (std::size_t i = 0; i < pieces_.size(); ++i) {
        if (!entered_[i]) continue;
        const std::size_t s = pieces_[i].slot;
        if (streams_[s] == root_stream()) continue;
        device_guard guard(exec_.device(s));
        exec_.scratch().slot(s).done().record(streams_[s]);
        exec_.scratch().slot(s).done().order_before(root_stream());
      }
    } catch (...) {
      // The original error is what the caller sees; a failure here means the device is lost.
    }
  }

  cudaStream_t root_stream() const { return streams_[root_slot_]; }
  int root_device() const { return exec_.device(root_slot_); }

  /// Before piece i's step touches the arena: its stream follows the fork.
  void enter(const piece_context& ctx) {
    entered_[ctx.index] = 1;
    if (ctx.stream != root_stream()) root_.fork().order_before(ctx.stream);
  }
  /// After piece i's step is enqueued: its work is marked done for the root to join.
  void leave(const piece_context& ctx) {
    if (ctx.stream != root_stream()) exec_.scratch().slot(ctx.slot).done().record(ctx.stream);
  }
  /// The root waits for every step that entered.
  void join() {
    for (std::size_t i = 0; i < pieces_.size(); ++i) {
      if (!entered_[i]) continue;
      const std::size_t s = pieces_[i].slot;
      if (streams_[s] != root_stream()) exec_.scratch().slot(s).done().order_before(root_stream());
    }
    joined_ = true;
  }
  /// A second round reads what the root wrote after join(): the root records its fork
  /// event again and the next steps wait for it.
  void start_next_round() {
    guard_->set(root_device());
    root_.fork().record(root_stream());
    joined_ = false;
    std::fill(entered_.begin(), entered_.end(), 0);
  }
  /// The steps of the last round read the arena after the call returns (scans read their
  /// carries): remember them, so that the next call on this root waits for them first. In a
  /// graph capture, where every stream must end joined to the root, the root joins them.
  void end_with_readers() {
    if (streams_.capturing()) {
      join();
      return;
    }
    for (std::size_t i = 0; i < pieces_.size(); ++i)
      if (entered_[i]) readers().push_back(pieces_[i].slot);
    joined_ = true;
  }
  /// The arena on the root, for `bytes`, by the group's merge route for `kind`.
  void* arena(std::size_t bytes, merge_kind kind) { return collective_arena(exec_, root_slot_, bytes, kind); }

 private:
  std::vector<std::size_t>& readers() { return root_.readers(); }
  executor& exec_;
  slot_streams streams_;
  std::span<const piece> pieces_;
  std::size_t root_slot_;
  slot_scratch& root_;
  std::optional<device_guard> guard_;
  std::vector<char>& entered_;
  bool joined_ = false;
};

/// Aligned offset of the carries after `count` partials of P.
template <class P, class T>
constexpr std::size_t carries_offset(std::size_t count) {
  constexpr std::size_t a = alignof(T) > alignof(P) ? alignof(T) : alignof(P);
  return (count * sizeof(P) + a - 1) / a * a;
}

/// What every collective's fingerprint holds: its pieces and where the reference range's
/// pieces are, and the partial operator.
template <class U, class POp>
void fingerprint_pieces(call_fingerprint& fingerprint, const range_ref<U>& range, const POp& op) {
  fingerprint.add(op);
  for (std::size_t i = 0; i < range.pieces.size(); ++i) fingerprint.add_all(range.pieces[i], range.data(i));
}

/// Reduces every piece into a partial with `reduce_piece(ctx, P* out, bool first)` (the first
/// piece folds in the caller's init), folds the partials in order on the first piece's
/// device, and returns a future for the unwrapped result. `fallback` is the value of an
/// empty range. With `front`, the fold starts from *front (for steps that cannot fold an
/// init in themselves). With a `fingerprint` (every value the steps depend on beyond the
/// pieces and `op`: init, transforms, other operands' pointers), the call may be captured
/// into a graph and replayed under dispatch_policy::graph.
template <class T, class P, class POp, class U, class ReducePiece>
future<T> reduce_pieces(const range_ref<U>& range, POp op, T fallback, ReducePiece&& reduce_piece,
                        const P* front = nullptr, call_fingerprint* fingerprint = nullptr) {
  if (range.pieces.empty()) return future<T>(fallback);
  const device_group& group = range.group();
  executor& exec = executor_of(group);
  const std::size_t k = range.pieces.size();
  const std::size_t root = range.pieces[0].slot;
  staging_pool::lease result = exec.staging().acquire(sizeof(T));
  T* result_slot = result.template as<T>();
  {
    scratch_lock lock(exec.scratch());
    const bool replayable = fingerprint != nullptr && exec.replays();
    {
      device_guard guard(exec.device(root));
      result.order_before(exec.stream(root));
    }
    bool direct = false;
    if constexpr (std::is_same_v<P, T>) direct = k == 1 && front == nullptr && !replayable;
    // fold_partials' arguments, in one place: the launch below and a replay, which rewrites
    // the result address, both read them. The arena is taken (grown if need be) before any
    // capture.
    const P* fold_in =
        direct ? nullptr : static_cast<const P*>(collective_arena(exec, root, k * sizeof(P), merge_kind::reduction));
    std::size_t fold_count = k;
    P fold_init = front ? *front : P{};
    bool fold_has_init = front != nullptr;
    void* fold_arguments[] = {&fold_in, &fold_count, &op, &result_slot, &fold_init, &fold_has_init};
    const result_kernel fold{reinterpret_cast<void*>(&fold_partials<P, POp, T>), fold_arguments};
    auto enqueue = [&](const slot_streams& streams) {
      collective_call call(range, streams);
      if (direct) {
        // One piece: CUB writes the finished value straight into mapped host memory.
        for_each_piece(range, streams, [&](const piece_context& ctx) {
          call.enter(ctx);
          reduce_piece(ctx, reinterpret_cast<P*>(result_slot), true);
          call.leave(ctx);
        });
        call.join();
        return;
      }
      P* partials = const_cast<P*>(fold_in);
      for_each_piece(range, streams, [&](const piece_context& ctx) {
        call.enter(ctx);
        reduce_piece(ctx, partials + ctx.index, ctx.index == 0);
        call.leave(ctx);
      });
      const nvtx_range collective("collective: reduce partials in order", k);
      call.join();
      device_guard guard(exec.device(root));
      check_cub(cudaLaunchKernel(fold.function, dim3(1), dim3(1), fold.arguments, 0, streams[root]),
                "fold_partials", std::source_location::current());
      observe_work(streams[root], "fold_partials");
    };
    if (replayable) {
      fingerprint_pieces(*fingerprint, range, op);
      fingerprint->add_all(fold_init, fold_has_init);
    }
    exec.collective({&call_key<std::remove_cvref_t<ReducePiece>>, range.pieces,
                             replayable ? fingerprint : nullptr, &fold},
                            enqueue);
  }
  device_guard guard(exec.device(root));
  result.fence(exec.device(root), exec.stream(root));
  event_pool::handle done = exec.events().record(exec.device(root), exec.stream(root));
  return future<T>(group, std::move(result), result_slot, std::move(done));
}

/// scan_pieces for k > 1 pieces, with the scratch lock held.
template <class T, class P, class POp, class U, class ReducePiece, class ScanPiece>
void scan_collective(const range_ref<U>& range, const slot_streams& streams, POp op, ReducePiece& reduce_piece,
                     ScanPiece& scan_piece) {
  const std::size_t k = range.pieces.size();
  collective_call call(range, streams);
  std::byte* arena = static_cast<std::byte*>(call.arena(carries_offset<P, T>(k) + k * sizeof(T), merge_kind::scan));
  P* partials = reinterpret_cast<P*>(arena);
  T* carries = reinterpret_cast<T*>(arena + carries_offset<P, T>(k));
  // Round 1: local reductions of pieces 0..k-2; piece 0 scans at once, needing no carry.
  for_each_piece(range, streams, [&](const piece_context& ctx) {
    if (ctx.index + 1 == k) return;
    call.enter(ctx);
    reduce_piece(ctx, partials + ctx.index, ctx.index == 0);
    call.leave(ctx);
  });
  call.join();
  {
    const nvtx_range collective("collective: exclusive scan of partials", k);
    device_guard guard(call.root_device());
    scan_partials<<<1, 1, 0, call.root_stream()>>>(static_cast<const P*>(partials), k - 1, op, carries);
    check_launch("scan_partials");
    observe_work(call.root_stream(), "scan_partials");
  }
  // Round 2: every piece scans; pieces after the first read their carry.
  call.start_next_round();
  for_each_piece(range, streams, [&](const piece_context& ctx) {
    if (ctx.index == 0) {
      scan_piece(ctx, static_cast<const T*>(nullptr));
      return;
    }
    call.enter(ctx);
    scan_piece(ctx, static_cast<const T*>(carries + (ctx.index - 1)));
    call.leave(ctx);
  });
  call.end_with_readers();
}

/// Reduce-then-scan over the pieces of `range`. Pieces 0..k-2 are reduced into partials by
/// `reduce_piece(ctx, P* out, bool first)`, all at once; one tiny scan on the root turns the
/// partials into every piece's carry; then `scan_piece(ctx, const T* carry)` runs each
/// piece's scan reading its carry at run time (nullptr for piece 0, which needs none and
/// waits for nobody). The last piece's total is needed by nobody and is never computed.
template <class T, class P, class POp, class U, class ReducePiece, class ScanPiece>
void scan_pieces(const range_ref<U>& range, POp op, ReducePiece&& reduce_piece, ScanPiece&& scan_piece,
                 call_fingerprint* fingerprint = nullptr) {
  const std::size_t k = range.pieces.size();
  if (k == 0) return;
  executor& exec = executor_of(range.group());
  // Also with one piece: the slot's scratch (CUB's temporary storage and its size cache) is
  // shared with every other call on the group.
  scratch_lock lock(exec.scratch());
  const bool replayable = fingerprint != nullptr && exec.replays();
  auto enqueue = [&](const slot_streams& streams) {
    if (k == 1)
      for_each_piece(range, streams,
                     [&](const piece_context& ctx) { scan_piece(ctx, static_cast<const T*>(nullptr)); });
    else
      scan_collective<T, P>(range, streams, op, reduce_piece, scan_piece);
  };
  if (replayable) fingerprint_pieces(*fingerprint, range, op);
  exec.collective({&call_key<std::remove_cvref_t<ScanPiece>>, range.pieces,
                           replayable ? fingerprint : nullptr, nullptr},
                          enqueue);
}

}  // namespace multigpu::detail
