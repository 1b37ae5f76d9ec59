#pragma once
// Halo exchange of distributed N-D arrays (docs/mdarray.md#halos): faces, edges and corners in
// one round, each box straight from the tile that owns it; fixed boundaries filled; none left
// as they are. No host wait: the exchange runs on each slot's halo stream, forked from the
// slot's stream by an event, and end joins it back.

#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>

namespace multigpu {

/// Starts filling every halo of `a` from the tiles' current contents (as ordered on their slot
/// streams). Until exchange_halos_end(a), work on the slot streams runs beside the exchange:
/// it may read a's interior but must not write it, nor read its halos. std::length_error when
/// a halo is wider than a tile it must come from (also at construction).
template <class T, std::size_t Rank>
void exchange_halos_begin(distributed_mdarray<T, Rank>& a) {
  const nvtx_range range("mdarray halo exchange begin", a.size());
  a.halo_engine().begin();
}

/// Later work on every slot's stream sees the halos filled by the last exchange_halos_begin.
/// No host wait.
template <class T, std::size_t Rank>
void exchange_halos_end(distributed_mdarray<T, Rank>& a) {
  a.halo_engine().end();
}

/// exchange_halos_begin then exchange_halos_end.
template <class T, std::size_t Rank>
void exchange_halos(distributed_mdarray<T, Rank>& a) {
  exchange_halos_begin(a);
  exchange_halos_end(a);
}

}  // namespace multigpu
