#pragma once
// The executor's halo-exchange collective: after it, each segment's halo holds copies of its
// neighbours' boundary elements. Each boundary moves straight from neighbour to neighbour,
// over a peer link where the route allows and through pinned host memory elsewhere. The
// moves go through copy_between, which forks every (source, target) pair from the
// streams involved and joins them back, so the exchange is ordered after earlier work on
// both sides and before later work, with no host synchronisation and no whole-vector copy.
// exchange_halos (extension/halo.hpp) and stencil_transform call it.

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/container/halo_plan.hpp>
#include <multigpu/core/nvtx.hpp>

#include <vector>

namespace multigpu::detail {

template <class T>
void halo_exchange(distributed_vector<T>& v) {
  const halo h = v.halo();
  if (h.width == 0 || v.empty()) return;
  const nvtx_range range("halo exchange", h.width);
  std::vector<transfer::byte_move> moves;
  for (const halo_move& m : plan_halo_exchange(v.layout(), h.width, h.periodic)) {
    const segment_view<T> src = v.segment(m.src_slot);
    const segment_view<T> dst = v.segment(m.dst_slot);
    T* target = m.to_left ? dst.data() - h.width : dst.data() + dst.size();
    moves.push_back({m.src_slot, src.data() + m.src_offset, m.dst_slot, target, m.count * sizeof(T)});
  }
  transfer::copy_between(v.group(), v.group(), moves);
}

}  // namespace multigpu::detail
