#pragma once
// inclusive_scan_by_key: out[i] = the fold (by op, in order) of the values from the start of
// i's run of consecutive equal keys to i, as thrust::inclusive_scan_by_key.
//
// One CUB scan-by-key per piece (every slot at once, on its own device), and for every piece
// after the first the length of its leading run (one CUB min-reduction of the positions where
// the key changes). The host then reads the keys on both sides of every boundary and the value
// scanned before it (one wait for the keys, one for the values): where a run crosses the
// boundary, the piece's leading run needs the carry folded in from the left,
// out[j] = op(carry, out[j]), one launch over that run only. Carries pass along in order, so a
// run across several slots and a non-commutative op stay correct.
//
// Runs are found by comparing neighbours, eq(key[i - 1], key[i]): CUB does within a slot, the
// leading-run length does within a piece, and the host does across a boundary (the last key
// before it against the first after it), so the slot count never changes the result, even for
// a predicate that is not an equivalence (|a - b| <= 1). The call waits for the devices, the
// copy into an output on another group or layout included.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/scan_by_key.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <type_traits>
#include <vector>

namespace multigpu {

/// For each i in [0, last - first), writes to out + i the fold (by op, in order) of the values
/// from the start of i's run of consecutive equal keys (by eq) up to i, as
/// thrust::inclusive_scan_by_key. The values start at values_first and need as many elements
/// as the keys (std::invalid_argument otherwise, nothing written); out may be the values or
/// the keys themselves. op must be associative, not commutative, and __host__ __device__ like eq.
/// Returns the end of the output. Waits for the devices, the output written.
template <segmented_iterator_type KI, segmented_iterator_type VI, class V, class Eq = cuda::std::equal_to<>,
          class Op = cuda::std::plus<>>
segmented_iterator<V, false> inclusive_scan_by_key(KI keys_first, KI keys_last, VI values_first,
                                                   segmented_iterator<V, false> out, Eq eq = {}, Op op = {}) {
  using K = typename KI::value_type;
  static_assert(std::is_same_v<typename VI::value_type, V>,
                "multigpu::inclusive_scan_by_key: the output's type must be the values'");
  detail::check_host_device_operator<Eq>();
  detail::check_host_device_operator<Op>();
  const nvtx_range mark("inclusive_scan_by_key", static_cast<std::uint64_t>(keys_last - keys_first));
  auto [kv, begin, count] = detail::unpack_range("inclusive_scan_by_key", keys_first, keys_last);
  if (count == 0) return out;
  const auto& values = detail::unpack_output("inclusive_scan_by_key", values_first, count, "values");
  auto& out_vector = detail::unpack_output("inclusive_scan_by_key", out, count);
  detail::range_ref<K> range(*kv, begin, count);
  const detail::aligned_input<V> in(range, values, values_first.index());
  // Staged when the output overlaps the keys (read again after the scan) or the values at
  // another index.
  const bool stage = detail::overlaps_shifted(values, values_first.index(), out_vector, out.index(), count) ||
                     detail::overlaps(*kv, begin, out_vector, out.index(), count);
  detail::aligned_output<V> result(range, out_vector, out.index(), stage);

  const std::size_t k = range.pieces.size();
  // Per piece after the first: the length of its leading run (the first key that differs
  // from the piece's first, or the piece's count).
  const std::vector<std::size_t> lead = detail::count_per_piece<std::uint64_t>(
      range, [&](const detail::piece_context& ctx, std::uint64_t* length) {
        const K* keys = range.data(ctx.index);
        const V* values_in = in.data(ctx.index);
        V* values_out = result.data(ctx.index);
        detail::cub_call(*ctx.scratch, ctx.stream, "cub::DeviceScan::InclusiveScanByKey", ctx.count,
                         [&](void* temp, std::size_t& bytes) {
                           return detail::with_count(ctx.count, [&](auto n) {
                             return cub::DeviceScan::InclusiveScanByKey(temp, bytes, keys, values_in, values_out, op,
                                                                        n, eq, ctx.stream);
                           });
                         });
        if (ctx.index == 0) return;
        auto changes = thrust::make_transform_iterator(
            thrust::counting_iterator<std::uint64_t>(0),
            detail::key_change_at<K, Eq>{keys, static_cast<std::uint64_t>(ctx.count), eq});
        detail::cub_call(*ctx.scratch, ctx.stream, "cub::DeviceReduce::Reduce (leading run)", ctx.count,
                         [&](void* temp, std::size_t& bytes) {
                           return detail::with_count(ctx.count, [&](auto n) {
                             return cub::DeviceReduce::Reduce(temp, bytes, changes, length, n, cuda::minimum<>{},
                                                              static_cast<std::uint64_t>(ctx.count), ctx.stream);
                           });
                         });
      });

  // Carries, in order: piece i's leading run continues the run before it when the keys on
  // both sides of the boundary are equal; that run's value at the boundary is the value
  // scanned there, with its own carry folded in when the whole piece before was one run. The
  // keys on both sides of every boundary and the values scanned before it are read first,
  // with one wait each.
  std::vector<std::size_t> before(k > 0 ? k - 1 : 0), sides;
  for (std::size_t i = 1, start = range.pieces[0].count; i < k; start += range.pieces[i].count, ++i) {
    before[i - 1] = start - 1;
    sides.push_back(start - 1);
    sides.push_back(start);
  }
  const std::vector<K> side_keys = range.read(std::span<const std::size_t>(sides));
  const std::vector<V> scanned = result.read(std::span<const std::size_t>(before));
  std::vector<std::optional<V>> carry(k);
  for (std::size_t i = 1; i < k; ++i) {
    if (!static_cast<bool>(eq(side_keys[2 * (i - 1)], side_keys[2 * (i - 1) + 1]))) continue;
    const bool whole_run_carried = carry[i - 1].has_value() && lead[i - 1] == range.pieces[i - 1].count;
    carry[i] = whole_run_carried ? static_cast<V>(op(*carry[i - 1], scanned[i - 1])) : scanned[i - 1];
  }
  {
    detail::executor& exec = detail::executor_of(range.group());
    detail::scratch_lock lock(exec.scratch());
    for (std::size_t i = 1; i < k; ++i) {
      if (!carry[i]) continue;
      const piece& p = range.pieces[i];
      device_guard guard(exec.device(p.slot));
      const cudaStream_t stream = exec.stream(p.slot);
      const auto n = static_cast<std::size_t>(lead[i]);
      detail::fold_carry_into_run<<<detail::blocks_for(n, detail::tuning::elementwise_threads),
                                    detail::tuning::elementwise_threads, 0, stream>>>(result.data(i), n, *carry[i], op);
      detail::check_launch("fold_carry_into_run");
    }
  }
  result.commit();
  // The scans and carries run on the keys' group; a staged result is then copied to the
  // output's, whose streams the copy is ordered on.
  detail::wait_for_groups({&range.group(), &out_vector.group()});
  return out + static_cast<std::ptrdiff_t>(count);
}

/// The same over whole vectors: out (of at least keys.size() elements, and it may be values)
/// gets the scan of values by the runs of keys.
template <class K, class V, class Eq = cuda::std::equal_to<>, class Op = cuda::std::plus<>>
void inclusive_scan_by_key(const distributed_vector<K>& keys, const distributed_vector<V>& values,
                           distributed_vector<V>& out, Eq eq = {}, Op op = {}) {
  multigpu::inclusive_scan_by_key(keys.begin(), keys.end(), values.begin(), out.begin(), eq, op);
}

/// The same with the keys as a view of part of a vector (std::ranges::subrange,
/// std::views::take, ...) in place of [keys_first, keys_last).
template <segmented_range R, segmented_iterator_type VI, class V, class Eq = cuda::std::equal_to<>,
          class Op = cuda::std::plus<>>
segmented_iterator<V, false> inclusive_scan_by_key(R&& keys, VI values_first, segmented_iterator<V, false> out,
                                                   Eq eq = {}, Op op = {}) {
  return multigpu::inclusive_scan_by_key(std::ranges::begin(keys), std::ranges::end(keys), values_first, out, eq, op);
}

}  // namespace multigpu
