#pragma once
// The collectives of the executor, in one process: "reduce partials in order", "exclusive scan
// of partials" and "count per piece". An algorithm states its local step per piece and calls
// one of these. The first two order their streams by the collective protocol
// (runtime/detail/collective_sync.hpp): the local steps of one call never wait for each other,
// the root's fold (or carry scan) waits for every step it consumes, also on the error path.
// Count per piece needs no protocol: each step writes its own entry of one pinned block, whose
// lease orders it.
// Partials meet in the root slot's persistent scratch: device memory (merge_route::device,
// read and written directly or over peer links) or pinned mapped host memory
// (merge_route::host_mapped). Nothing is allocated per call once the scratch has grown.
// Each collective hands its enqueueing to the group's executor (runtime/detail/executor.hpp),
// which runs it on the slots' streams or, under dispatch_policy::graph, captures it into a CUDA
// graph and replays it; the streams to use are handed in, and what a call depends on is
// written into its fingerprint.

#include <multigpu/algorithm/detail/collective/partial_kernels.hpp>
#include <multigpu/algorithm/detail/local/local_reduce.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/future.hpp>
#include <multigpu/runtime/detail/collective_sync.hpp>
#include <multigpu/runtime/detail/executor.hpp>

#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

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

/// Aligned offset of the carries after `count` partials of P.
template <class P, class T>
constexpr std::size_t carries_offset(std::size_t count) {
  constexpr std::size_t a = alignof(T) > alignof(P) ? alignof(T) : alignof(P);
  return (count * sizeof(P) + a - 1) / a * a;
}

/// The values a replayable() step depends on (an init, a transform), copied.
template <class... V>
struct step_values {
  std::tuple<V...> values;
};
template <class... V>
step_values<V...> depends_on(const V&... v) {
  return {std::tuple<V...>(v...)};
}

/// A local step that a graph may capture once and replay: called as
/// step(ctx, args..., operands.data(ctx.index)...), each operand (a range_ref, an
/// aligned_input or aligned_output, anything with data(i)) giving its value for the piece.
/// What the work it enqueues depends on, beyond the pieces and the operator, is stated with
/// it: the values of depends_on() and each operand's value per piece. They are the call's
/// fingerprint, added value by value, and the step reads nothing else that changes between
/// calls. (The step's own closure bytes would not do: its padding and its empty members' bytes
/// are indeterminate. A user's operator in depends_on() is added as the bytes of its state.)
/// A value that is not trivially copyable makes the fingerprint invalid, and the call then
/// runs eagerly. Made by replayable().
template <class Step, class Values, class... Operands>
struct replayable_step {
  Step step;
  Values values;
  std::tuple<const Operands&...> operands;

  template <class... A>
  void operator()(const piece_context& ctx, A&&... args) const {
    std::apply([&](const Operands&... o) { step(ctx, std::forward<A>(args)..., o.data(ctx.index)...); }, operands);
  }
  /// Adds the values and every operand's value for each piece of `reference`, the call's
  /// range, whose own pointers every fingerprint holds already (replay_fingerprint).
  template <class U>
  void fingerprint(call_fingerprint& fingerprint, const range_ref<U>& reference) const {
    std::apply([&](const auto&... v) { fingerprint.add_all(v...); }, values.values);
    const auto add = [&](const auto& operand, std::size_t i) {
      if (static_cast<const void*>(&operand) != static_cast<const void*>(&reference)) fingerprint.add(operand.data(i));
    };
    for (std::size_t i = 0; i < reference.pieces.size(); ++i)
      std::apply([&](const Operands&... o) { (add(o, i), ...); }, operands);
  }
};
template <class Step, class... V, class... Operands>
replayable_step<Step, step_values<V...>, Operands...> replayable(Step step, step_values<V...> values,
                                                                 const Operands&... operands) {
  return {step, values, std::tie(operands...)};
}

template <class S>
inline constexpr bool is_replayable_step = false;
template <class Step, class Values, class... Operands>
inline constexpr bool is_replayable_step<replayable_step<Step, Values, Operands...>> = true;

/// The fingerprint of a call on `range` whose every step is replayable(), when the executor
/// replays: the partial operator, the pieces and where the range's pieces are, then each
/// step's statements. Empty otherwise, and the call runs eagerly.
template <class U, class POp, class... Steps>
std::optional<call_fingerprint> replay_fingerprint(const executor& exec, const range_ref<U>& range, const POp& op,
                                                   const Steps&... steps) {
  std::optional<call_fingerprint> fingerprint;
  if constexpr ((is_replayable_step<Steps> && ...)) {
    if (exec.replays()) {
      fingerprint.emplace();
      fingerprint->add(op);
      for (std::size_t i = 0; i < range.pieces.size(); ++i) fingerprint->add_all(range.pieces[i], range.data(i));
      (steps.fingerprint(*fingerprint, range), ...);
    }
  }
  return fingerprint;
}

/// Reduces every piece into a partial with `reduce_piece(ctx, P* out, bool first)` (the first
/// piece folds in the caller's init), folds the partials in order on the first piece's
/// device, and returns a future for the unwrapped result. `fallback` is the value of an
/// empty range. With `front`, the fold starts from *front (for steps that cannot fold an
/// init in themselves). A replayable() step may be captured into a graph and replayed under
/// dispatch_policy::graph.
template <class T, class P, class POp, class U, class ReducePiece>
future<T> reduce_pieces(const range_ref<U>& range, POp op, T fallback, ReducePiece&& reduce_piece,
                        const P* front = nullptr) {
  if (range.pieces.empty()) return future<T>(fallback);
  const device_group& group = range.group();
  executor& exec = executor_of(group);
  const std::size_t k = range.pieces.size();
  const std::size_t root = range.pieces[0].slot;
  staging_pool::lease result = exec.staging().acquire(sizeof(T));
  T* result_slot = result.template as<T>();
  {
    scratch_lock lock(exec.scratch());
    // A replayed call has a fingerprint; an eager one has none and may take the direct path.
    std::optional<call_fingerprint> fingerprint = replay_fingerprint(exec, range, op, reduce_piece);
    {
      device_guard guard(exec.device(root));
      result.order_before(exec.stream(root));
    }
    bool direct = false;
    if constexpr (std::is_same_v<P, T>) direct = k == 1 && front == nullptr && !fingerprint;
    // The fold with this call's arguments: launched below, or patched into a replayed graph
    // (the result address changes per call). The arena is taken (grown if need be) before
    // any capture.
    P* partials =
        direct ? nullptr : static_cast<P*>(collective_arena(exec, root, k * sizeof(P), merge_kind::reduction));
    const P fold_init = front ? *front : P{};
    kernel_launch fold(&fold_partials<P, POp, T>, static_cast<const P*>(partials), k, op, result_slot, fold_init,
                       front != nullptr);
    const result_kernel fold_node = fold.node();
    auto enqueue = [&](const slot_streams& streams) {
      collective_call call(exec.sync(), range.pieces, streams);
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
      for_each_piece(range, streams, [&](const piece_context& ctx) {
        call.enter(ctx);
        reduce_piece(ctx, partials + ctx.index, ctx.index == 0);
        call.leave(ctx);
      });
      const nvtx_range collective("collective: reduce partials in order", k);
      call.join();
      device_guard guard(exec.device(root));
      check_cub(fold(dim3(1), dim3(1), streams[root]), "fold_partials", std::source_location::current());
      observe_work(streams[root], "fold_partials");
    };
    if (fingerprint) fingerprint->add_all(fold_init, front != nullptr);
    exec.collective({&call_key<std::remove_cvref_t<ReducePiece>>, range.pieces,
                     fingerprint ? &*fingerprint : nullptr, &fold_node},
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
  executor& exec = executor_of(range.group());
  collective_call call(exec.sync(), range.pieces, streams);
  std::byte* arena = static_cast<std::byte*>(
      collective_arena(exec, call.root(), carries_offset<P, T>(k) + k * sizeof(T), merge_kind::scan));
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
/// When both steps are replayable(), the call may be captured into a graph and replayed.
template <class T, class P, class POp, class U, class ReducePiece, class ScanPiece>
void scan_pieces(const range_ref<U>& range, POp op, ReducePiece&& reduce_piece, ScanPiece&& scan_piece) {
  const std::size_t k = range.pieces.size();
  if (k == 0) return;
  executor& exec = executor_of(range.group());
  // Also with one piece: the slot's scratch (CUB's temporary storage and its size cache) is
  // shared with every other call on the group.
  scratch_lock lock(exec.scratch());
  auto enqueue = [&](const slot_streams& streams) {
    if (k == 1)
      for_each_piece(range, streams,
                     [&](const piece_context& ctx) { scan_piece(ctx, static_cast<const T*>(nullptr)); });
    else
      scan_collective<T, P>(range, streams, op, reduce_piece, scan_piece);
  };
  const std::optional<call_fingerprint> fingerprint = replay_fingerprint(exec, range, op, reduce_piece, scan_piece);
  exec.collective({&call_key<std::remove_cvref_t<ScanPiece>>, range.pieces, fingerprint ? &*fingerprint : nullptr,
                   nullptr},
                  enqueue);
}

/// Count per piece, read in one wait: the collective of a call whose every piece yields one
/// number the host needs (a selection's survivors, a reduce-by-key's runs). `step(ctx, where)`
/// enqueues piece ctx.index's work, which writes its number to `where`, an entry of a pinned
/// staging block. Every slot's stream
/// first follows the block's earlier users; the steps run under the scratch lock (CUB's
/// temporary storage is the slots' scratch, shared with the collectives) and do not wait for
/// each other. Waits for the devices and returns the numbers, one per piece; an entry that a
/// step did not write is unspecified. Count is the type the device writes.
template <class Count, class T, class Step>
std::vector<std::size_t> count_per_piece(const range_ref<T>& range, Step&& step) {
  const std::size_t k = range.pieces.size();
  if (k == 0) return {};
  executor& exec = executor_of(range.group());
  staging_pool::lease found = exec.staging().acquire(k * sizeof(Count));
  Count* counts = found.as<Count>();
  {
    for (const piece& p : range.pieces) {
      device_guard guard(exec.device(p.slot));
      found.order_before(exec.stream(p.slot));
    }
    scratch_lock lock(exec.scratch());
    for_each_piece(range, [&](const piece_context& ctx) {
      step(ctx, counts + ctx.index);
      found.fence(ctx.device, ctx.stream);
    });
  }
  found.order_before_host();
  return std::vector<std::size_t>(counts, counts + k);
}

}  // namespace multigpu::detail
