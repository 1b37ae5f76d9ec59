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
#include <multigpu/algorithm/detail/reduce_by_key.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
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
