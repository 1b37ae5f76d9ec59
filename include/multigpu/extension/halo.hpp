#pragma once
// Halo exchange: after it, each segment's halo holds copies of its neighbours' boundary
// elements. Each boundary moves straight from neighbour to neighbour, over a peer link where
// the route allows and through pinned host memory elsewhere, ordered by events: no host
// synchronisation and no whole-vector copies. Host-only code (no kernels).

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/container/halo_plan.hpp>
#include <multigpu/core/nvtx.hpp>

#include <vector>

namespace multigpu {

/// Refreshes every halo of v from its neighbours. Outer halos of a non-periodic vector are
/// left as they are (zero bytes unless written through segment_view). Every non-empty
/// segment must hold at least halo().width elements (std::invalid_argument otherwise).
template <class T>
void exchange_halos(distributed_vector<T>& v) {
  const halo h = v.halo();
  if (h.width == 0 || v.empty()) return;
  const nvtx_range range("exchange_halos", h.width);
  std::vector<transfer::byte_move> moves;
  for (const halo_move& m : plan_halo_exchange(v.layout(), h.width, h.periodic)) {
    const segment_view<T> src = v.segment(m.src_slot);
    const segment_view<T> dst = v.segment(m.dst_slot);
    T* target = m.to_left ? dst.data() - h.width : dst.data() + dst.size();
    moves.push_back({m.src_slot, src.data() + m.src_offset, m.dst_slot, target, m.count * sizeof(T)});
  }
  transfer::copy_between(v.group().state(), v.group().state(), moves);
}

}  // namespace multigpu
