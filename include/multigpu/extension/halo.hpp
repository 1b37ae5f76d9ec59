#pragma once
// Halo exchange for extensions: refreshes the halos of a vector, so that a kernel launched
// on each segment's stream can read its neighbours' boundary elements at data()[-width] ..
// data()[size() + width - 1]. The exchange is the executor's halo collective
// (algorithm/detail/halo_exchange.hpp): peer or host-staged moves between neighbours only,
// ordered by events, no host synchronisation. Host-only code (no kernels).

#include <multigpu/algorithm/detail/collective/halo_exchange.hpp>
#include <multigpu/container/distributed_vector.hpp>

namespace multigpu {

/// Refreshes every halo of v from its neighbours. Outer halos of a non-periodic vector are
/// left as they are (zero bytes unless written through segment_view). Every non-empty
/// segment must hold at least halo().width elements (std::invalid_argument otherwise).
template <class T>
void exchange_halos(distributed_vector<T>& v) {
  detail::halo_exchange(v);  // opens the NVTX range "halo exchange"
}

}  // namespace multigpu
