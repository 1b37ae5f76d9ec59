#pragma once
// The steps behind reduce_by_key (algorithm/reduce_by_key.hpp): one CUB reduce-by-key per
// piece, runs joined across slot boundaries by comparing neighbours, and the checks of its
// outputs. Contains device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/detail/select.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/dispatch/dispatch_reduce_by_key.cuh>
#include <cuda/std/functional>

#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {
namespace detail {

/// One CUB reduce-by-key per piece of `range`: piece i's runs go to keys_to(i) and values_to(i)
/// (device pointers on the piece's device, with room for the piece); returns the runs per
/// piece. Waits for the devices.
template <class K, class V, class Eq, class Op, class KeysTo, class ValuesTo>
std::vector<std::size_t> reduce_pieces_by_key(const range_ref<K>& range, const aligned_input<V>& values, Eq eq, Op op,
                                              KeysTo keys_to, ValuesTo values_to) {
  return count_per_piece<std::int64_t>(range, [&](const piece_context& ctx, std::int64_t* counted) {
    const K* keys_in = range.data(ctx.index);
    const V* values_in = values.data(ctx.index);
    K* keys_out = keys_to(ctx.index);
    V* values_out = values_to(ctx.index);
    cub_call(*ctx.scratch, ctx.stream, "cub::DeviceReduce::ReduceByKey", ctx.count,
             [&](void* temp, std::size_t& bytes) {
               return with_count(ctx.count, [&](auto n) {
                 using offset = decltype(n);
                 return cub::DispatchReduceByKey<const K*, K*, const V*, V*, std::int64_t*, Eq, Op,
                                                 offset>::Dispatch(temp, bytes, keys_in, keys_out, values_in,
                                                                   values_out, counted, eq, op, n, ctx.stream);
               });
             });
  });
}

/// The runs of every piece, each slot's in a vector laid out as the range (what CUB wrote), and
/// for each piece whether its first run continues the run before the piece (the last key
/// before the piece and the piece's first key are equal by eq). A joined run's aggregate, folded,
/// is in the run before the boundary; its key is the one of the piece's first run.
template <class K, class V>
struct joined_runs {
  distributed_vector<K> keys;
  distributed_vector<V> aggregates;
  std::vector<std::size_t> runs;   // per piece
  std::vector<std::size_t> joins;  // per piece: 1 when its first run continues the run before it
  std::size_t total = 0;           // runs after joining
};

/// Reduces each piece into temporaries laid out as the range, then joins the runs across
/// piece boundaries on the host. The keys on both sides of every boundary are read with one
/// wait; where some join, the aggregates on both sides of those boundaries with one more. A
/// run that continues over several pieces folds their aggregates in order into the aggregate
/// where it starts (op needs associativity, not commutativity), written back without waiting.
template <class K, class V, class Eq, class Op>
joined_runs<K, V> reduce_and_join(const range_ref<K>& range, const aligned_input<V>& values, Eq eq, Op op) {
  joined_runs<K, V> r{distributed_vector<K>(range.group(), layout_like(range)),
                      distributed_vector<V>(range.group(), layout_like(range)),
                      {},
                      {},
                      0};
  r.runs = reduce_pieces_by_key(
      range, values, eq, op, [&](std::size_t i) { return r.keys.segment(range.pieces[i].slot).data(); },
      [&](std::size_t i) { return r.aggregates.segment(range.pieces[i].slot).data(); });
  // Trimmed to the runs: global index at[i] below is then where piece i's runs start.
  std::vector<std::size_t> per_slot(range.group().size(), 0);
  for (std::size_t i = 0; i < r.runs.size(); ++i) per_slot[range.pieces[i].slot] = r.runs[i];
  keep_segment_prefixes(r.keys, per_slot);
  keep_segment_prefixes(r.aggregates, per_slot);
  const std::size_t k = r.runs.size();
  std::vector<std::size_t> at(k), sides;  // sides: the input keys on both sides of each boundary
  for (std::size_t i = 0, next = 0, start = 0; i < k; ++i) {
    at[i] = next;
    next += r.runs[i];
    if (i > 0) {
      sides.push_back(start - 1);
      sides.push_back(start);
    }
    start += range.pieces[i].count;
    r.total = next;
  }
  const std::vector<K> side_keys = range.read(std::span<const std::size_t>(sides));
  // The aggregates a join folds: the last run before the boundary and the first after it.
  r.joins.assign(k, 0);
  std::vector<std::size_t> wanted, first_of(k), last_of(k);
  for (std::size_t i = 1; i < k; ++i) {
    if (!static_cast<bool>(eq(side_keys[2 * (i - 1)], side_keys[2 * (i - 1) + 1]))) continue;
    r.joins[i] = 1;
    --r.total;
    last_of[i - 1] = wanted.size();
    wanted.push_back(at[i] - 1);
    first_of[i] = wanted.size();
    wanted.push_back(at[i]);
  }
  if (wanted.empty()) return r;  // no run crosses a boundary
  const std::vector<V> edge = r.aggregates.read(std::span<const std::size_t>(wanted));
  std::optional<V> open;  // the aggregate of the run that continues over the next boundary
  std::size_t open_at = 0;
  std::vector<std::size_t> folded_at;  // aggregates that took in runs after them, written at once
  std::vector<V> folded;
  for (std::size_t i = 0; i < k; ++i) {
    const bool joins_next = i + 1 < k && r.joins[i + 1] != 0;
    if (r.joins[i] != 0) {
      open = static_cast<V>(op(*open, edge[first_of[i]]));
      if (r.runs[i] == 1 && joins_next) continue;  // the whole piece is inside the run, still open
      folded_at.push_back(open_at);
      folded.push_back(*open);
    }
    if (joins_next) {
      open_at = at[i + 1] - 1;
      open = edge[last_of[i]];
    }
  }
  r.aggregates.write(std::span<const std::size_t>(folded_at), std::span<const V>(folded));
  return r;
}

/// Copies the runs of `from` except those at `skipped` (ascending global indices) densely to
/// `to` from `to_at`: one copy per stretch between skipped runs.
template <class T>
void copy_runs_skipping(const distributed_vector<T>& from, std::span<const std::size_t> skipped,
                        distributed_vector<T>& to, std::size_t to_at) {
  std::size_t next = 0, written = 0;
  auto copy_until = [&](std::size_t end) {
    if (end <= next) return;
    detail::vector_access::copy_range_from(to, from, next, end - next, to_at + written);
    written += end - next;
  };
  for (std::size_t s : skipped) {
    copy_until(s);
    next = s + 1;
  }
  copy_until(from.size());
}

/// Copies the joined runs, in order, to `keys` from keys_at and to `values` from values_at.
/// At a boundary that a run crosses, the keys skip the run before it (the joined run's key is
/// the one CUB wrote for its last part, as within a slot) and the aggregates the run after it
/// (the folded aggregate is where the run starts). Without runs crossing slots it is one copy
/// per output.
template <class K, class V>
void copy_joined_runs(const joined_runs<K, V>& r, distributed_vector<K>& keys, std::size_t keys_at,
                      distributed_vector<V>& values, std::size_t values_at) {
  std::vector<std::size_t> skipped_keys, skipped_aggregates;
  for (std::size_t i = 0, at = 0; i < r.runs.size(); at += r.runs[i], ++i) {
    if (r.joins[i] == 0) continue;  // never the first piece: at > 0
    skipped_keys.push_back(at - 1);
    skipped_aggregates.push_back(at);
  }
  copy_runs_skipping(r.keys, std::span<const std::size_t>(skipped_keys), keys, keys_at);
  copy_runs_skipping(r.aggregates, std::span<const std::size_t>(skipped_aggregates), values, values_at);
}

/// The whole-vector forms' rule: one value per key, std::invalid_argument naming both counts
/// otherwise (before anything is written).
inline void expect_a_value_per_key(std::size_t keys, std::size_t values) {
  MULTIGPU_EXPECTS(keys == values, concat("reduce_by_key: ", keys, " keys but ", values,
                                          " values: the whole-vector forms take one value per key (pass "
                                          "iterators or views for part of a vector); nothing was written"));
}

/// Throws std::invalid_argument unless `out` has room for `runs` elements.
template <class T>
void expect_room_for_runs(segmented_iterator<T, false> out, std::size_t count, std::size_t runs, const char* which) {
  const std::size_t size = out.container() ? out.container()->size() : 0;
  const std::size_t free = out.container() && out.index() <= size ? size - out.index() : 0;
  MULTIGPU_EXPECTS(runs <= free, concat("reduce_by_key: the ", count, " keys form ", runs, " runs, but ", which,
                                        " has room for ", free, ": nothing was written; make room for them"));
}

}  // namespace detail

}  // namespace multigpu
