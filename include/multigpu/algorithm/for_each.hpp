#pragma once
// for_each: f(T&) on every element, one grid per segment; nothing waits.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_for.cuh>

namespace multigpu {

template <class T, class F>
void for_each(segmented_iterator<T, false> first, segmented_iterator<T, false> last, F f) {
  detail::check_device_operator<F>();
  const nvtx_range range_mark("for_each", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("for_each", first, last);
  if (count == 0) return;
  detail::mutable_range_ref<T> range(*v, begin, count);
  detail::for_each_piece(range, [&](const detail::piece_context& ctx) {
    T* data = range.data(ctx.index);
    detail::check_cub(
        detail::with_count(ctx.count, [&](auto n) { return cub::DeviceFor::ForEachN(data, n, f, ctx.stream); }),
        "cub::DeviceFor::ForEachN", std::source_location::current());
  });
}

template <class T, class F>
void for_each(distributed_vector<T>& v, F f) {
  for_each(v.begin(), v.end(), f);
}

/// for_each over a view of part of a vector (std::ranges::subrange, ...).
template <segmented_range R, class F>
auto for_each(R&& r, F f) -> decltype(multigpu::for_each(std::ranges::begin(r), std::ranges::end(r), f)) {
  multigpu::for_each(std::ranges::begin(r), std::ranges::end(r), f);
}

}  // namespace multigpu
