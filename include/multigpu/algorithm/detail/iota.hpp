#pragma once
// iota's local step, shared by iota and the team's iota: each element computed from its index.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/functors.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_for.cuh>

#include <cstdint>
#include <vector>

namespace multigpu::detail {

/// Element i of [first, last) becomes value + T(base + i): computed directly, not by repeated
/// ++, and rounded once (a team's ranks pass their global offset as `base`).
template <class T>
void iota_from(segmented_iterator<T, false> first, segmented_iterator<T, false> last, T value, std::size_t base) {
  const nvtx_range range_mark("iota", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = unpack_range("iota", first, last);
  if (count == 0) return;
  mutable_range_ref<T> range(*v, begin, count);
  std::vector<std::size_t> offsets(range.pieces.size(), base);  // of each piece, plus base
  for (std::size_t i = 1; i < offsets.size(); ++i) offsets[i] = offsets[i - 1] + range.pieces[i - 1].count;
  for_each_piece(range, [&](const piece_context& ctx) {
    iota_functor<T> f{range.data(ctx.index), value, offsets[ctx.index]};
    check_cub(with_count(ctx.count, [&](auto n) { return cub::DeviceFor::Bulk(n, f, ctx.stream); }),
              "cub::DeviceFor::Bulk", std::source_location::current());
  });
}

}  // namespace multigpu::detail
