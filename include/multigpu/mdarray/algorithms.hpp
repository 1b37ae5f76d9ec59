#pragma once
// The algorithm set on distributed N-D arrays, over interiors (halos are neither read nor
// written): fill, transform, reduce, transform_reduce, equal, and copy between arrays of the
// same extents laid out differently (slabs to pencils, another group). One grid per slot on
// its stream; only the calls that return a value to the host wait, and only for the slots
// they read.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>
#include <multigpu/mdarray/for_each_tile.hpp>
#include <multigpu/mdarray/per_slot.hpp>
#include <multigpu/mdarray/replicated.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/transfer/device_copy.hpp>

#include <cuda/std/functional>

#include <cstddef>
#include <map>
#include <vector>

namespace multigpu {

namespace detail {
template <class T, std::size_t Rank>
struct fill_point {
  tile_ref<T, Rank> tile;
  T value;
  __device__ void operator()(const md_point<Rank>& i) const { tile(i) = value; }
};
template <class T, class U, std::size_t Rank, class F>
struct transform_point {
  tile_ref<T, Rank> in;
  tile_ref<U, Rank> out;
  F f;
  __device__ void operator()(const md_point<Rank>& i) const { out(i) = f(in(i)); }
};
template <class A, class B, class U, std::size_t Rank, class F>
struct transform2_point {
  tile_ref<A, Rank> a;
  tile_ref<B, Rank> b;
  tile_ref<U, Rank> out;
  F f;
  __device__ void operator()(const md_point<Rank>& i) const { out(i) = f(a(i), b(i)); }
};
template <class T, std::size_t Rank>
md_box<Rank> interior_box(const distributed_mdarray<T, Rank>& a, std::size_t slot) {
  return md_box<Rank>{{}, a.layout().tile_extents(slot)};
}
template <class A, class B>
struct equal_pair {
  __host__ __device__ bool operator()(const A& a, const B& b) const { return a == b; }
};
struct logical_and {
  __host__ __device__ bool operator()(bool a, bool b) const { return a && b; }
};
}  // namespace detail

/// Every interior element = value.
template <class T, std::size_t Rank>
void fill(distributed_mdarray<T, Rank>& a, const T& value) {
  const nvtx_range range("mdarray fill", a.size());
  for_each_tile(a, [&](const md_tile<T, Rank>& t) {
    detail::launch_points(detail::interior_box(a, t.slot), detail::fill_point<T, Rank>{t.ref(), value}, t.stream,
                          "mdarray fill");
  });
}

/// out(i) = f(in(i)) over the interiors; in and out may be the same array. f may be per_slot.
/// std::invalid_argument unless both have the same extents, group and grid.
template <class T, std::size_t Rank, class U, class F>
void transform(const distributed_mdarray<T, Rank>& in, distributed_mdarray<U, Rank>& out, F f) {
  const nvtx_range range("mdarray transform", in.size());
  detail::expect_same_tiles(in, out, "transform");
  for_each_tile(out, [&](const md_tile<U, Rank>& t) {
    auto g = detail::bind_slot(f, t.slot);
    detail::launch_points(detail::interior_box(in, t.slot),
                          detail::transform_point<T, U, Rank, decltype(g)>{in.tile(t.slot).ref(), t.ref(), g},
                          t.stream, "mdarray transform");
  });
}

/// out(i) = f(a(i), b(i)).
template <class A, class B, std::size_t Rank, class U, class F>
void transform(const distributed_mdarray<A, Rank>& a, const distributed_mdarray<B, Rank>& b,
               distributed_mdarray<U, Rank>& out, F f) {
  const nvtx_range range("mdarray transform", a.size());
  detail::expect_same_tiles(a, out, "transform");
  detail::expect_same_tiles(b, out, "transform");
  for_each_tile(out, [&](const md_tile<U, Rank>& t) {
    auto g = detail::bind_slot(f, t.slot);
    detail::launch_points(
        detail::interior_box(a, t.slot),
        detail::transform2_point<A, B, U, Rank, decltype(g)>{a.tile(t.slot).ref(), b.tile(t.slot).ref(), t.ref(), g},
        t.stream, "mdarray transform");
  });
}

/// init op transform(x) op ... over the interiors, on the host (waits for the array's slots).
/// reduce_op must be associative and commutative.
template <class T, std::size_t Rank, class U, class Op, class F>
U transform_reduce(const distributed_mdarray<T, Rank>& a, U init, Op reduce_op, F transform) {
  replicated<U> result(a.group());
  transform_reduce_replicated(a, init, reduce_op, transform, result);
  return result.get(0);
}

template <class T, std::size_t Rank, class U, class Op = cuda::std::plus<>>
U reduce(const distributed_mdarray<T, Rank>& a, U init, Op op = {}) {
  return transform_reduce(a, init, op, detail::identity_op{});
}

/// Copies `from` onto `to` (same extents, std::invalid_argument otherwise), whatever their
/// grids and groups: each overlap of a source tile with a target tile is packed on the
/// source's stream, moved in one contiguous copy (peer or staged, copy_between) and unpacked on
/// the target's stream; tiles of one slot in one layout copy box to box. No host wait.
template <class T, std::size_t Rank>
void copy(const distributed_mdarray<T, Rank>& from, distributed_mdarray<T, Rank>& to) {
  const nvtx_range range("mdarray copy", from.size());
  const auto moves = plan_redistribution(from.layout(), to.layout());  // checks the extents
  const bool same_group = from.group() == to.group();
  const std::size_t src_slots = from.tile_count();
  const std::size_t dst_slots = to.tile_count();
  std::vector<std::vector<detail::strided_box<T, Rank>>> pack(src_slots), unpack(dst_slots);
  std::vector<std::size_t> send_count(src_slots, 0), recv_count(dst_slots, 0);
  struct routed {
    const md_redistribution_move<Rank>* move;
    std::size_t send_offset;
    std::size_t recv_offset;
  };
  std::vector<routed> through;
  for (const auto& m : moves) {
    const auto ts = from.tile(m.src_slot);
    const auto td = to.tile(m.dst_slot);
    const md_index<Rank> src_padded = padded_extents(from.layout().tile_extents(m.src_slot), from.halo_widths());
    const md_index<Rank> dst_padded = padded_extents(to.layout().tile_extents(m.dst_slot), to.halo_widths());
    const md_index<Rank> src_at = detail::padded_position(m.global.start, ts.offset, from.halo_widths());
    const md_index<Rank> dst_at = detail::padded_position(m.global.start, td.offset, to.halo_widths());
    if (same_group && m.src_slot == m.dst_slot) {
      unpack[m.dst_slot].push_back(detail::make_box<T, Rank>(ts.with_halo.data_handle(), src_padded, src_at,
                                                             td.with_halo.data_handle(), dst_padded, dst_at,
                                                             m.global.extent));
      continue;
    }
    through.push_back({&m, send_count[m.src_slot], recv_count[m.dst_slot]});
    send_count[m.src_slot] += m.global.count();
    recv_count[m.dst_slot] += m.global.count();
  }
  std::vector<device_buffer<T>> send(src_slots), recv(dst_slots);
  for (std::size_t s = 0; s < src_slots; ++s)
    if (send_count[s] > 0) send[s] = device_buffer<T>(send_count[s], from.group().pool(s), from.group().stream(s));
  for (std::size_t s = 0; s < dst_slots; ++s)
    if (recv_count[s] > 0) recv[s] = device_buffer<T>(recv_count[s], to.group().pool(s), to.group().stream(s));
  std::vector<transfer::byte_move> bytes;
  for (const routed& r : through) {
    const auto& m = *r.move;
    const auto ts = from.tile(m.src_slot);
    const auto td = to.tile(m.dst_slot);
    const md_index<Rank> src_padded = padded_extents(from.layout().tile_extents(m.src_slot), from.halo_widths());
    const md_index<Rank> dst_padded = padded_extents(to.layout().tile_extents(m.dst_slot), to.halo_widths());
    T* packed_src = send[m.src_slot].data() + r.send_offset;
    T* packed_dst = recv[m.dst_slot].data() + r.recv_offset;
    pack[m.src_slot].push_back(detail::make_box<T, Rank>(
        ts.with_halo.data_handle(), src_padded, detail::padded_position(m.global.start, ts.offset, from.halo_widths()),
        packed_src, m.global.extent, {}, m.global.extent));
    unpack[m.dst_slot].push_back(detail::make_box<T, Rank>(
        packed_dst, m.global.extent, {}, td.with_halo.data_handle(), dst_padded,
        detail::padded_position(m.global.start, td.offset, to.halo_widths()), m.global.extent));
    bytes.push_back({m.src_slot, packed_src, m.dst_slot, packed_dst, m.global.count() * sizeof(T)});
  }
  for (std::size_t s = 0; s < src_slots; ++s) {
    if (pack[s].empty()) continue;
    device_guard guard(from.group().device(s));
    detail::launch_boxes<T, Rank>(pack[s], from.group().stream(s), "mdarray copy pack");
  }
  // Same-slot boxes read `from` on the slot's stream, which copy_between also orders.
  transfer::copy_between(from.group(), to.group(), bytes);
  for (std::size_t s = 0; s < dst_slots; ++s) {
    if (unpack[s].empty()) continue;
    device_guard guard(to.group().device(s));
    detail::launch_boxes<T, Rank>(unpack[s], to.group().stream(s), "mdarray copy unpack");
  }
  // The buffers go back to their pools on their streams: after the copies (copy_between makes
  // the sources' streams wait for them) and after the unpacks.
}

/// True when every element of a equals the element of b at the same index (interiors; any
/// layouts: b is copied onto a's layout first when they differ). std::invalid_argument for
/// different extents. Waits for the result.
template <class T, std::size_t Rank>
bool equal(const distributed_mdarray<T, Rank>& a, const distributed_mdarray<T, Rank>& b) {
  const nvtx_range range("mdarray equal", a.size());
  MULTIGPU_EXPECTS(a.extents() == b.extents(),
                   detail::concat("equal: arrays of extents (", detail::format_index(a.extents(), " x "), ") and (",
                                  detail::format_index(b.extents(), " x "), ")"));
  if (!(a.group() == b.group() && a.layout().grid() == b.layout().grid())) {
    mdarray_options<T, Rank> options;
    options.grid = a.layout().grid();
    distributed_mdarray<T, Rank> aligned(a.extents(), a.group(), options);
    copy(b, aligned);
    return equal(a, aligned);
  }
  distributed_mdarray<bool, Rank> same(a.extents(), a.group(), [&] {
    mdarray_options<bool, Rank> o;
    o.grid = a.layout().grid();
    return o;
  }());
  transform(a, b, same, detail::equal_pair<T, T>{});
  return transform_reduce(same, true, detail::logical_and{}, detail::identity_op{});
}

}  // namespace multigpu
