#pragma once
// reduce_by_key: for every run of consecutive equal keys, a key and the reduction of its
// values, as thrust::reduce_by_key.
//
// Runs are found by comparing neighbours, eq(key[i - 1], key[i]), as CUB and Thrust do (it
// matters for a predicate that is not an equivalence, such as |a - b| <= 1), and the key
// written for a run is its last key: the one cub::DeviceReduce::ReduceByKey writes (whose
// documentation said the first; NVIDIA/cccl#1282). The number of slots never changes a result.
//
// One CUB reduce-by-key per segment (each slot reduces its own runs on its own device, into a
// temporary laid out as the input), one count per piece read back, then the runs that cross
// a segment boundary are joined on the host: a piece's first run continues the run before it
// when the last key before the piece and the piece's first key are equal by eq, exactly the
// comparison CUB makes within a slot. The joined run's aggregate folds in order (the operator
// needs associativity, not commutativity) and stays where the run starts; its key is the one
// CUB wrote for the run's last part. The runs are then written densely into the outputs. The
// call waits for the devices, the copies into the outputs included.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/select.hpp>
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
  return counted_pieces<std::int64_t>(range, [&](const piece_context& ctx, std::int64_t* counted) {
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
  const std::vector<V> edge = read_elements(r.aggregates, std::span<const std::size_t>(wanted));
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
  write_elements(r.aggregates, std::span<const std::size_t>(folded_at), std::span<const V>(folded));
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
    to.copy_range_from(from, next, end - next, to_at + written);
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

/// For every run of consecutive equal keys in [keys_first, keys_last) (neighbours compared by
/// eq), writes the run's last key to keys_out and the reduction (by op, in order) of the run's
/// values, which start at values_first, to values_out; returns both outputs' new ends, as
/// thrust::reduce_by_key. values_first needs as many values from it as there are keys, and each
/// output room for the runs (std::invalid_argument otherwise, with nothing written). The
/// outputs may be any vectors on any groups. op runs on the device and, for runs that cross
/// segments, on the host: it must be __host__ __device__ and associative; eq likewise. Waits for
/// the devices, the copies into the outputs included.
template <segmented_iterator_type KI, segmented_iterator_type VI, class K, class V,
          class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
std::pair<segmented_iterator<K, false>, segmented_iterator<V, false>>
reduce_by_key(KI keys_first, KI keys_last, VI values_first, segmented_iterator<K, false> keys_out,
              segmented_iterator<V, false> values_out, Eq eq = {}, Op op = {}) {
  static_assert(std::is_same_v<typename KI::value_type, K>, "multigpu::reduce_by_key: the key output's type must be the keys'");
  static_assert(std::is_same_v<typename VI::value_type, V>,
                "multigpu::reduce_by_key: the value output's type must be the values'");
  detail::check_host_device_operator<Eq>();
  detail::check_host_device_operator<Op>();
  const nvtx_range mark("reduce_by_key", static_cast<std::uint64_t>(keys_last - keys_first));
  auto [kv, begin, count] = detail::unpack_range("reduce_by_key", keys_first, keys_last);
  if (count == 0) return {keys_out, values_out};
  const auto& values = detail::unpack_output("reduce_by_key", values_first, count, "values");
  MULTIGPU_EXPECTS(keys_out.container() != nullptr && values_out.container() != nullptr,
                   "reduce_by_key: an output iterator does not belong to a vector (default-constructed?)");
  detail::range_ref<K> range(*kv, begin, count);
  const detail::aligned_input<V> aligned(range, values, values_first.index());

  // One piece with room in both outputs on its slot: straight into them, as one CUB call
  // (whose count read waits for it). Not when an output is also the other input, or both
  // outputs are one vector.
  const bool apart = !detail::same_vector(*kv, *values_out.container()) &&
                     !detail::same_vector(values, *keys_out.container()) &&
                     !detail::same_vector(values, *values_out.container()) &&
                     !detail::same_vector(*keys_out.container(), *values_out.container());
  K* keys_direct = apart ? detail::direct_output(range, keys_out) : nullptr;
  V* values_direct = nullptr;
  if (keys_direct != nullptr) {
    const detail::range_ref<V> value_range(values, values_first.index(), count);
    if (value_range.pieces.size() == 1 && value_range.pieces[0].slot == range.pieces[0].slot && values.group() == kv->group())
      values_direct = detail::direct_output(value_range, values_out);
  }
  if (keys_direct != nullptr && values_direct != nullptr) {
    const std::vector<std::size_t> runs = detail::reduce_pieces_by_key(
        range, aligned, eq, op, [&](std::size_t) { return keys_direct; }, [&](std::size_t) { return values_direct; });
    const auto n = static_cast<std::ptrdiff_t>(runs[0]);
    return {keys_out + n, values_out + n};
  }

  detail::joined_runs<K, V> r = detail::reduce_and_join(range, aligned, eq, op);
  detail::expect_room_for_runs(keys_out, count, r.total, "the key output");
  detail::expect_room_for_runs(values_out, count, r.total, "the value output");
  detail::copy_joined_runs(r, *keys_out.container(), keys_out.index(), *values_out.container(), values_out.index());
  detail::wait_for_groups({&keys_out.container()->group(), &values_out.container()->group()});
  return {keys_out + static_cast<std::ptrdiff_t>(r.total), values_out + static_cast<std::ptrdiff_t>(r.total)};
}

/// The same over whole vectors, which take one value per key (std::invalid_argument naming
/// both counts otherwise, nothing written); returns both outputs' new ends.
template <class K, class V, class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
std::pair<segmented_iterator<K, false>, segmented_iterator<V, false>>
reduce_by_key(const distributed_vector<K>& keys, const distributed_vector<V>& values, distributed_vector<K>& keys_out,
              distributed_vector<V>& values_out, Eq eq = {}, Op op = {}) {
  detail::expect_a_value_per_key(keys.size(), values.size());
  return multigpu::reduce_by_key(keys.begin(), keys.end(), values.begin(), keys_out.begin(), values_out.begin(), eq,
                                 op);
}

/// The same with the keys as a view of part of a vector (std::ranges::subrange,
/// std::views::take, ...) in place of [keys_first, keys_last).
template <segmented_range R, segmented_iterator_type VI, class K, class V, class Eq = cuda::std::equal_to<>,
          class Op = cuda::std::plus<>>
std::pair<segmented_iterator<K, false>, segmented_iterator<V, false>>
reduce_by_key(R&& keys, VI values_first, segmented_iterator<K, false> keys_out, segmented_iterator<V, false> values_out,
              Eq eq = {}, Op op = {}) {
  return multigpu::reduce_by_key(std::ranges::begin(keys), std::ranges::end(keys), values_first, keys_out, values_out,
                                 eq, op);
}

/// The layout-keeping form: the runs of each slot stay on that slot, in order, as copy_if's
/// layout-keeping form; a run that crosses slots stays on the slot where it starts (with its
/// last key, as everywhere). Returns the keys and the aggregates, both laid out as
/// distribution::from_sizes(runs per slot). The vectors take one value per key
/// (std::invalid_argument naming both counts otherwise). Waits for the devices.
template <class K, class V, class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
std::pair<distributed_vector<K>, distributed_vector<V>> reduce_by_key(const distributed_vector<K>& keys,
                                                                      const distributed_vector<V>& values, Eq eq = {},
                                                                      Op op = {}) {
  detail::check_host_device_operator<Eq>();
  detail::check_host_device_operator<Op>();
  const nvtx_range mark("reduce_by_key", static_cast<std::uint64_t>(keys.size()));
  detail::expect_a_value_per_key(keys.size(), values.size());
  if (keys.empty()) return {distributed_vector<K>(0, keys.group()), distributed_vector<V>(0, keys.group())};
  detail::range_ref<K> range(keys, 0, keys.size());
  const detail::aligned_input<V> aligned(range, values, 0);
  detail::joined_runs<K, V> r = detail::reduce_and_join(range, aligned, eq, op);
  if (r.total == r.keys.size())  // no run crosses a slot: every slot's runs already fill its segment
    return {std::move(r.keys), std::move(r.aggregates)};
  std::vector<std::size_t> sizes(keys.group().size(), 0);
  for (std::size_t i = 0; i < r.runs.size(); ++i) sizes[range.pieces[i].slot] = r.runs[i] - r.joins[i];
  std::pair<distributed_vector<K>, distributed_vector<V>> out{
      distributed_vector<K>(keys.group(), distribution::from_sizes(sizes)),
      distributed_vector<V>(keys.group(), distribution::from_sizes(sizes))};
  detail::copy_joined_runs(r, out.first, 0, out.second, 0);
  detail::wait_for_groups({&keys.group()});
  return out;
}

}  // namespace multigpu
