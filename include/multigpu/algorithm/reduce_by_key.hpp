#pragma once
// reduce_by_key: for every run of consecutive equal keys, the key and the reduction of its
// values, as thrust::reduce_by_key.
//
// One CUB reduce-by-key per segment (each slot reduces its own runs on its own device, into a
// temporary laid out as the input), one count per piece read back, then the runs that cross
// a segment boundary are joined on the host: the first run of a piece continues the last run
// before it when their keys are equal, so its aggregate is folded into that run's (in order:
// the operator needs associativity, not commutativity) and its key dropped. The joined runs
// are then written densely into the outputs. The call waits for the devices.

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

/// The runs of every piece, each slot's in a vector laid out as the range, and for each piece
/// whether its first run continues the run before the piece (then that run's aggregate, in the
/// slot before, already holds it: the piece's first run is to be dropped).
template <class K, class V>
struct joined_runs {
  distributed_vector<K> keys;
  distributed_vector<V> aggregates;
  std::vector<std::size_t> runs;  // per piece
  std::vector<std::size_t> drop;  // per piece: 1 when its first run joins the one before
  std::size_t total = 0;          // runs after joining
};

/// Reduces each piece into temporaries laid out as the range, then joins the runs across
/// piece boundaries on the host: the open run is the last run seen; a piece whose first key
/// equals the open run's key folds its first aggregate into it, in order (op needs
/// associativity, not commutativity). Reads the keys and aggregates at the piece edges with one
/// wait each; writes the folded aggregates back without waiting.
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
  r.drop.assign(k, 0);
  std::vector<std::size_t> at(k);
  for (std::size_t i = 0, next = 0; i < k; ++i) {
    at[i] = next;
    next += r.runs[i];
  }
  // What the join needs, read with one wait per vector: each piece's first run after the
  // first piece, and its last run before the last piece (a piece has at least one run).
  std::vector<std::size_t> wanted;
  std::vector<std::size_t> first_of(k), last_of(k);
  for (std::size_t i = 0; i < k; ++i) {
    if (i > 0) {
      first_of[i] = wanted.size();
      wanted.push_back(at[i]);
    }
    if (i + 1 < k) {
      last_of[i] = wanted.size();
      wanted.push_back(at[i] + r.runs[i] - 1);
    }
  }
  const std::vector<K> edge_keys = read_elements(r.keys, std::span<const std::size_t>(wanted));
  const std::vector<V> edge_values = read_elements(r.aggregates, std::span<const std::size_t>(wanted));
  std::optional<K> open_key;
  std::optional<V> open_value;
  std::size_t open_at = 0;
  bool changed = false;
  std::vector<std::size_t> folded_at;  // aggregates that took in runs after them, written at once
  std::vector<V> folded;
  auto flush = [&] {
    if (changed) {
      folded_at.push_back(open_at);
      folded.push_back(*open_value);
    }
    changed = false;
  };
  for (std::size_t i = 0; i < k; ++i) {
    if (open_key && static_cast<bool>(eq(*open_key, edge_keys[first_of[i]]))) {
      r.drop[i] = 1;
      open_value = static_cast<V>(op(*open_value, edge_values[first_of[i]]));
      changed = true;
      if (r.runs[i] == 1) continue;  // the whole piece is one run, still open
    }
    flush();
    if (i + 1 == k) break;  // no piece after it to continue its last run
    open_at = at[i] + r.runs[i] - 1;
    open_key = edge_keys[last_of[i]];
    open_value = edge_values[last_of[i]];
  }
  flush();
  write_elements(r.aggregates, std::span<const std::size_t>(folded_at), std::span<const V>(folded));
  for (std::size_t i = 0; i < k; ++i) r.total += r.runs[i] - r.drop[i];
  return r;
}

/// Copies the joined runs, in order and without each piece's dropped first run, to `keys` from
/// keys_at and to `values` from values_at. Runs that lie side by side go in one copy per
/// output (a dropped run splits them), so that without runs crossing slots it is one copy each.
template <class K, class V>
void copy_joined_runs(const joined_runs<K, V>& r, distributed_vector<K>& keys, std::size_t keys_at,
                      distributed_vector<V>& values, std::size_t values_at) {
  std::size_t from = 0, length = 0, written = 0, at = 0;
  auto flush = [&] {
    if (length == 0) return;
    keys.copy_range_from(r.keys, from, length, keys_at + written);
    values.copy_range_from(r.aggregates, from, length, values_at + written);
    written += length;
    length = 0;
  };
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    if (r.drop[i] != 0) flush();
    if (length == 0) from = at + r.drop[i];
    length += r.runs[i] - r.drop[i];
    at += r.runs[i];
  }
  flush();
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

/// For every run of consecutive equal keys (by eq) in [keys_first, keys_last), writes the key
/// to keys_out and the reduction (by op, in order) of the run's values, which start at
/// values_first, to values_out; returns both outputs' new ends, as thrust::reduce_by_key. The
/// values need as many elements as the keys, and each output room for the runs
/// (std::invalid_argument otherwise, with nothing written). The outputs may be any vectors on
/// any groups. op runs on the device and, for runs that cross segments, on the host: it must be
/// __host__ __device__ and associative; eq likewise. Waits for the devices.
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

  // One piece with room in both outputs on its slot: straight into them, as one CUB call.
  // (Not when an output is also the other input, or both outputs are one vector.)
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
  return {keys_out + static_cast<std::ptrdiff_t>(r.total), values_out + static_cast<std::ptrdiff_t>(r.total)};
}

/// The same over whole vectors; returns both outputs' new ends.
template <class K, class V, class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
std::pair<segmented_iterator<K, false>, segmented_iterator<V, false>>
reduce_by_key(const distributed_vector<K>& keys, const distributed_vector<V>& values, distributed_vector<K>& keys_out,
              distributed_vector<V>& values_out, Eq eq = {}, Op op = {}) {
  return multigpu::reduce_by_key(keys.begin(), keys.end(), values.begin(), keys_out.begin(), values_out.begin(), eq,
                                 op);
}

/// The layout-keeping form: the runs of each slot stay on that slot, in order, as copy_if's
/// layout-keeping form; a run that crosses slots stays on the slot where it starts. Returns
/// the keys and the aggregates, both laid out as distribution::from_sizes(runs per slot).
/// Waits for the devices.
template <class K, class V, class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
std::pair<distributed_vector<K>, distributed_vector<V>> reduce_by_key(const distributed_vector<K>& keys,
                                                                      const distributed_vector<V>& values, Eq eq = {},
                                                                      Op op = {}) {
  detail::check_host_device_operator<Eq>();
  detail::check_host_device_operator<Op>();
  const nvtx_range mark("reduce_by_key", static_cast<std::uint64_t>(keys.size()));
  MULTIGPU_EXPECTS(values.size() >= keys.size(),
                   detail::concat("reduce_by_key: ", keys.size(), " keys but ", values.size(),
                                  " values: every key needs its value"));
  if (keys.empty()) return {distributed_vector<K>(0, keys.group()), distributed_vector<V>(0, keys.group())};
  detail::range_ref<K> range(keys, 0, keys.size());
  const detail::aligned_input<V> aligned(range, values, 0);
  detail::joined_runs<K, V> r = detail::reduce_and_join(range, aligned, eq, op);
  const std::size_t slots = keys.group().size();
  std::vector<std::size_t> sizes(slots, 0);
  bool dropped = false;
  for (std::size_t i = 0; i < r.runs.size(); ++i) {
    sizes[range.pieces[i].slot] = r.runs[i] - r.drop[i];
    dropped = dropped || r.drop[i] != 0;
  }
  if (!dropped)  // every slot's runs already fill its segment: no copy
    return {std::move(r.keys), std::move(r.aggregates)};
  std::pair<distributed_vector<K>, distributed_vector<V>> out{
      distributed_vector<K>(keys.group(), distribution::from_sizes(sizes)),
      distributed_vector<V>(keys.group(), distribution::from_sizes(sizes))};
  detail::copy_joined_runs(r, out.first, 0, out.second, 0);  // slot by slot, each on its device
  return out;
}

}  // namespace multigpu
