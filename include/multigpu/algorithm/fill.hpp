#pragma once
// fill and iota: one grid per segment on its stream; nothing waits.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/iota.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_for.cuh>

#include <type_traits>

namespace multigpu {

template <class T>
void fill(segmented_iterator<T, false> first, segmented_iterator<T, false> last, const std::type_identity_t<T>& value) {
  const nvtx_range range_mark("fill", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("fill", first, last);
  if (count == 0) return;
  detail::mutable_range_ref<T> range(*v, begin, count);
  detail::for_each_piece(range, [&](const detail::piece_context& ctx) {
    detail::fill_functor<T> f{range.data(ctx.index), value};
    detail::check_cub(detail::with_count(ctx.count, [&](auto n) { return cub::DeviceFor::Bulk(n, f, ctx.stream); }),
                      "cub::DeviceFor::Bulk", std::source_location::current());
  });
}

template <class T>
void fill(distributed_vector<T>& v, const std::type_identity_t<T>& value) {
  fill(v.begin(), v.end(), value);
}

/// Element i of [first, last) becomes value + i (computed directly, not by repeated ++).
template <class T>
void iota(segmented_iterator<T, false> first, segmented_iterator<T, false> last, std::type_identity_t<T> value) {
  detail::iota_from(first, last, value, 0);
}

template <class T>
void iota(distributed_vector<T>& v, std::type_identity_t<T> value) {
  iota(v.begin(), v.end(), value);
}

/// fill and iota over a view of part of a vector (std::ranges::subrange, ...).
template <segmented_range R>
auto fill(R&& r, const std::ranges::range_value_t<R>& value)
    -> decltype(multigpu::fill(std::ranges::begin(r), std::ranges::end(r), value)) {
  multigpu::fill(std::ranges::begin(r), std::ranges::end(r), value);
}

template <segmented_range R>
auto iota(R&& r, std::ranges::range_value_t<R> value)
    -> decltype(multigpu::iota(std::ranges::begin(r), std::ranges::end(r), value)) {
  multigpu::iota(std::ranges::begin(r), std::ranges::end(r), value);
}

}  // namespace multigpu
