#pragma once
// stencil_transform on distributed N-D arrays (docs/mdarray.md#stencils): out(i) = f(acc) where
// acc(d0, ..., d{Rank-1}) reads in at i + d. By default the interior of every tile (the points
// whose reads stay inside the tile) runs while the halos are in flight, then the boundary strips
// once they have arrived.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>
#include <multigpu/mdarray/for_each_tile.hpp>
#include <multigpu/mdarray/halo.hpp>
#include <multigpu/mdarray/per_slot.hpp>

#include <cassert>
#include <cstddef>
#include <type_traits>

namespace multigpu {

/// What a stencil operator sees: acc(d...) is the input element at offset d from the centre.
/// Offsets must stay within the input's halo widths: the type cannot check them (widths are
/// run-time values), and a read beyond lands in a neighbouring row of the padded tile.
/// index() is the centre's global index, for boundary treatment of your own. `stride` is the
/// row-major tile's: its last entry is 1, and reads along the last dimension use that constant.
template <class T, std::size_t Rank>
class stencil_accessor {
 public:
  __host__ __device__ stencil_accessor(const T* centre, const detail::md_point<Rank>& stride,
                                       const detail::md_point<Rank>& index)
      : centre_(centre), stride_(stride), index_(index) {
    assert(stride[Rank - 1] == 1 && "stencil_accessor: tiles are row-major, the last stride is 1");
  }
  template <class... D>
    requires(sizeof...(D) == Rank && (std::is_integral_v<D> && ...))
  __host__ __device__ const T& operator()(D... d) const {
    const std::ptrdiff_t along[Rank] = {static_cast<std::ptrdiff_t>(d)...};
    std::ptrdiff_t offset = along[Rank - 1];
    for (std::size_t k = 0; k + 1 < Rank; ++k) offset += along[k] * static_cast<std::ptrdiff_t>(stride_[k]);
    return centre_[offset];
  }
  __host__ __device__ const T& centre() const { return *centre_; }
  __host__ __device__ const detail::md_point<Rank>& index() const { return index_; }

 private:
  const T* centre_;
  detail::md_point<Rank> stride_;
  detail::md_point<Rank> index_;
};

/// How stencil_transform orders the exchange and the compute.
enum class stencil_schedule {
  overlapped,     ///< interior during the exchange, then the boundary strips (the default)
  exchange_first  ///< the whole exchange, then the whole tile in one launch
};

namespace detail {
template <class T, class U, std::size_t Rank, class F>
struct stencil_point {
  tile_ref<T, Rank> in;
  tile_ref<U, Rank> out;
  md_point<Rank> offset;
  F f;
  __device__ void operator()(const md_point<Rank>& i) const {
    md_point<Rank> global;
    for (std::size_t d = 0; d < Rank; ++d) global[d] = offset[d] + i[d];
    out(i) = f(stencil_accessor<T, Rank>(&in(i), in.stride, global));
  }
};

template <class T, class U, std::size_t Rank, class F>
auto stencil_step(const distributed_mdarray<T, Rank>& in, const distributed_mdarray<U, Rank>& out, const F& f,
                  std::size_t slot, const md_index<Rank>& origin = {}) {
  const auto tin = in.tile(slot);
  auto g = bind_slot(f, slot);
  md_point<Rank> offset;  // the global index of the tile's first point; `origin` places a team rank's box
  for (std::size_t d = 0; d < Rank; ++d) offset[d] = origin[d] + tin.offset[d];
  return stencil_point<T, U, Rank, decltype(g)>{tin.ref(), out.tile(slot).ref(), offset, g};
}
}  // namespace detail

/// out(i) = f(acc) at every interior index i, acc reading `in` around i (stencil_accessor).
/// Exchanges in's halos first (the split form, overlapped with the interior, by default). `out`
/// must be another array with in's extents, group and grid (std::invalid_argument otherwise);
/// its halos are not written. f may be per_slot{make}. No host wait.
template <class T, class U, std::size_t Rank, class F>
void stencil_transform(distributed_mdarray<T, Rank>& in, distributed_mdarray<U, Rank>& out, F f,
                       stencil_schedule schedule = stencil_schedule::overlapped) {
  const nvtx_range range("mdarray stencil_transform", in.size());
  detail::expect_same_tiles(in, out, "stencil_transform");
  MULTIGPU_EXPECTS(static_cast<const void*>(&in) != static_cast<const void*>(&out),
                   "stencil_transform: the output must be another array than the input (in place would read "
                   "overwritten neighbours)");
  const auto widths = in.halo_widths();
  if (schedule == stencil_schedule::exchange_first) {
    exchange_halos(in);
    for (std::size_t s = 0; s < in.tile_count(); ++s) {
      const auto tile = in.tile(s);
      if (tile.empty()) continue;
      device_guard guard(tile.device);
      detail::launch_points(md_box<Rank>{{}, in.layout().tile_extents(s)}, detail::stencil_step(in, out, f, s),
                            tile.stream, "mdarray stencil");
    }
    return;
  }
  exchange_halos_begin(in);
  for (std::size_t s = 0; s < in.tile_count(); ++s) {
    const auto tile = in.tile(s);
    if (tile.empty()) continue;
    device_guard guard(tile.device);
    detail::launch_points(stencil_inner_region(in.layout().tile_extents(s), widths),
                          detail::stencil_step(in, out, f, s), tile.stream, "mdarray stencil interior");
  }
  exchange_halos_end(in);
  for (std::size_t s = 0; s < in.tile_count(); ++s) {
    const auto tile = in.tile(s);
    if (tile.empty()) continue;
    device_guard guard(tile.device);
    const auto step = detail::stencil_step(in, out, f, s);
    for (const md_box<Rank>& box : stencil_outer_regions(in.layout().tile_extents(s), widths))
      detail::launch_points(box, step, tile.stream, "mdarray stencil boundary");
  }
}

}  // namespace multigpu
