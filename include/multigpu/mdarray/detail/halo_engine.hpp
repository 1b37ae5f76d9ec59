#pragma once
// The halo exchange of one distributed N-D array (docs/mdarray.md#halos). Built once per array
// from its plan (mdarray/decomposition.hpp): per slot, a send and a receive buffer from the
// device's pool, the pack, unpack and fill boxes, and a halo stream of its own, so that the
// exchange runs beside whatever the slot's stream does between begin() and end().
//
// One exchange, per slot, all without a host wait:
//   fork     the halo stream waits for the slot's stream (the tile's latest contents) and for
//            the previous exchange's end on every neighbour (whose buffers it writes or reads;
//            before the first exchange, for the neighbour's buffers to exist);
//   pack     one launch copies every outgoing box into the send buffer, grouped by receiver;
//   move     one contiguous copy per (sender, receiver) pair: pulled by the receiver (same
//            device, or a peer link it can use), pushed by the sender (a link only it can
//            use), or through a pinned staging block (no link, or peer_policy::host_staged);
//   unpack   one launch copies the received boxes into the halos and fills fixed boundaries;
//   end()    the slot's stream waits for its halo stream.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/event_pool.hpp>
#include <multigpu/core/stream.hpp>
#include <multigpu/mdarray/decomposition.hpp>
#include <multigpu/mdarray/detail/tile_kernels.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <cstdio>
#include <exception>
#include <optional>
#include <set>
#include <vector>

namespace multigpu::detail {

/// The pack and unpack boxes of one exchange for the tiles held here (one process's, or one
/// rank's share of a team's plan). `held(tile)` is the slot holding a tile of the plan, or
/// `elsewhere`; per slot, bases[s] is its padded storage (of extents padded[s]) and send[s],
/// recv[s] its buffers. Outgoing boxes pack into the sender's send buffer, row-major in their
/// own extents; incoming ones unpack
/// from the receiver's receive buffer (a tile that is its own neighbour, one part in a periodic
/// dimension, straight from its send buffer); fixed boundaries fill with fill_values[d].
template <class T, std::size_t Rank, class Held>
void plan_halo_boxes(const halo_exchange_plan<Rank>& plan, Held held, std::size_t elsewhere,
                     const std::vector<T*>& bases, const std::vector<md_index<Rank>>& padded,
                     const std::vector<device_buffer<T>>& send, const std::vector<device_buffer<T>>& recv,
                     const std::array<T, Rank>& fill_values, std::vector<std::vector<strided_box<T, Rank>>>& pack,
                     std::vector<std::vector<strided_box<T, Rank>>>& unpack) {
  for (const auto& m : plan.moves) {
    const std::size_t from = held(m.src_slot);
    const std::size_t to = held(m.dst_slot);
    if (from != elsewhere)
      pack[from].push_back(make_box<T, Rank>(bases[from], padded[from], m.source.start,
                                             send[from].data() + m.send_offset, m.source.extent, {}, m.source.extent));
    if (to != elsewhere) {
      const T* source = m.src_slot == m.dst_slot ? send[to].data() + m.send_offset : recv[to].data() + m.recv_offset;
      unpack[to].push_back(
          make_box<T, Rank>(source, m.source.extent, {}, bases[to], padded[to], m.destination, m.source.extent));
    }
  }
  for (const auto& f : plan.fills) {
    const std::size_t to = held(f.slot);
    if (to == elsewhere) continue;
    strided_box<T, Rank> b =
        make_box<T, Rank>(nullptr, f.region.extent, {}, bases[to], padded[to], f.region.start, f.region.extent);
    b.value = fill_values[f.dimension];
    unpack[to].push_back(b);
  }
}

template <class T, std::size_t Rank>
class md_halo_engine {
 public:
  /// `tiles[s]` is slot s's padded storage (null for an empty tile); `fill_values[d]` is what a
  /// fixed boundary in dimension d writes. Throws std::length_error when a halo is wider than a
  /// tile (check_halo_fits), before anything is allocated.
  md_halo_engine(const device_group& group, const md_decomposition<Rank>& layout, const md_index<Rank>& widths,
                 const std::array<boundary_kind, Rank>& boundaries, const std::array<T, Rank>& fill_values,
                 const std::vector<T*>& tiles)
      : group_(group), plan_(plan_halo_exchange(layout, widths, boundaries)) {
    const std::size_t slots = layout.slot_count();
    active_.assign(slots, false);
    for (std::size_t s = 0; s < slots; ++s) active_[s] = !layout.tile_empty(s);
    neighbours_.resize(slots);
    for (const auto& p : plan_.pairs) {
      if (p.src_slot == p.dst_slot) continue;
      neighbours_[p.src_slot].insert(p.dst_slot);
      neighbours_[p.dst_slot].insert(p.src_slot);
    }
    send_.resize(slots);
    recv_.resize(slots);
    pack_.resize(slots);
    unpack_.resize(slots);
    done_.resize(slots);
    halo_streams_.resize(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      if (!active_[s]) continue;
      halo_streams_[s].emplace(group_.device(s));
      send_[s] = device_buffer<T>(plan_.send_count[s], group_.pool(s), group_.stream(s));
      recv_[s] = device_buffer<T>(plan_.recv_count[s], group_.pool(s), group_.stream(s));
    }
    // The buffers exist in the slot streams' order; a neighbour's halo stream that pushes into
    // or pulls from them in the first exchange waits for this mark.
    allocated_.resize(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      if (!active_[s]) continue;
      device_guard guard(group_.device(s));
      allocated_[s] = resources_of(group_).events().record(group_.device(s), group_.stream(s));
    }
    std::vector<md_index<Rank>> padded(slots);
    for (std::size_t s = 0; s < slots; ++s) padded[s] = padded_extents(layout.tile_extents(s), widths);
    plan_halo_boxes<T, Rank>(plan_, [](std::size_t tile) { return tile; }, slots, tiles, padded, send_, recv_,
                             fill_values, pack_, unpack_);
  }

  md_halo_engine(const md_halo_engine&) = delete;
  md_halo_engine& operator=(const md_halo_engine&) = delete;

  /// The slot streams wait for the halo streams, so that the buffers (released on the slot
  /// streams) and the tiles outlive every copy and kernel of an exchange still in flight.
  ~md_halo_engine() {
    try {
      join_all();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "multigpu: distributed_mdarray: joining the halo streams failed: %s\n", e.what());
    }
  }

  bool has_work() const noexcept { return !plan_.moves.empty() || !plan_.fills.empty(); }
  const halo_exchange_plan<Rank>& plan() const noexcept { return plan_; }
  cudaStream_t halo_stream(std::size_t slot) const { return halo_streams_.at(slot)->get(); }

  /// Enqueues one exchange on the halo streams (see the file comment). Staging blocks are taken
  /// before any data moves, so a failure for want of pinned memory leaves the halos as they were.
  void begin() {
    if (!has_work()) return;
    group_resources& resources = resources_of(group_);
    event_pool& events = resources.events();
    const std::size_t slots = active_.size();

    struct staged {
      const typename halo_exchange_plan<Rank>::pair_move* pair;
      staging_pool::lease block;
    };
    std::vector<staged> staged_pairs;
    for (const auto& p : plan_.pairs)
      if (p.src_slot != p.dst_slot && group_.route_between(p.src_slot, p.dst_slot).kind == route::host_staged)
        staged_pairs.push_back({&p, resources.staging().acquire(p.count * sizeof(T))});

    // Fork from the slot streams, after the neighbours' previous exchange.
    for (std::size_t s = 0; s < slots; ++s) {
      if (!active_[s]) continue;
      device_guard guard(group_.device(s));
      events.order(group_.device(s), group_.stream(s), halo_stream(s));
      for (std::size_t n : neighbours_[s]) {
        if (done_[n])
          done_[n].order_before(halo_stream(s));
        else if (allocated_[n])
          allocated_[n].order_before(halo_stream(s));
      }
    }
    std::vector<event_pool::handle> packed(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      if (!active_[s] || pack_[s].empty()) continue;
      device_guard guard(group_.device(s));
      launch_boxes<T, Rank>(pack_[s], halo_stream(s), "mdarray halo pack");
      packed[s] = events.record(group_.device(s), halo_stream(s));
    }
    std::vector<event_pool::handle> pushed;
    for (const auto& p : plan_.pairs) {
      if (p.src_slot == p.dst_slot) continue;
      const copy_route r = group_.route_between(p.src_slot, p.dst_slot);
      if (r.kind == route::host_staged) continue;
      const T* from = send_[p.src_slot].data() + p.send_offset;
      T* to = recv_[p.dst_slot].data() + p.recv_offset;
      const std::size_t bytes = p.count * sizeof(T);
      const int src_device = group_.device(p.src_slot);
      const int dst_device = group_.device(p.dst_slot);
      if (r.issued_by_destination) {
        device_guard guard(dst_device);
        packed[p.src_slot].order_before(halo_stream(p.dst_slot));
        copy(to, dst_device, from, src_device, bytes, r.kind, halo_stream(p.dst_slot));
      } else {
        device_guard guard(src_device);
        copy(to, dst_device, from, src_device, bytes, r.kind, halo_stream(p.src_slot));
        pushed.push_back(events.record(src_device, halo_stream(p.src_slot)));
        pushed.back().order_before(halo_stream(p.dst_slot));
      }
    }
    for (staged& st : staged_pairs) {
      const auto& p = *st.pair;
      const int src_device = group_.device(p.src_slot);
      const int dst_device = group_.device(p.dst_slot);
      const std::size_t bytes = p.count * sizeof(T);
      event_pool::handle downloaded;
      {
        device_guard guard(src_device);
        st.block.order_before(halo_stream(p.src_slot));
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(st.block.data(), send_[p.src_slot].data() + p.send_offset, bytes,
                                          cudaMemcpyDeviceToHost, halo_stream(p.src_slot)));
        observe_work(halo_stream(p.src_slot), "mdarray halo download");
        downloaded = events.record(src_device, halo_stream(p.src_slot));
      }
      device_guard guard(dst_device);
      downloaded.order_before(halo_stream(p.dst_slot));
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(recv_[p.dst_slot].data() + p.recv_offset, st.block.data(), bytes,
                                        cudaMemcpyHostToDevice, halo_stream(p.dst_slot)));
      observe_work(halo_stream(p.dst_slot), "mdarray halo upload");
      st.block.fence(dst_device, halo_stream(p.dst_slot));
    }
    for (std::size_t s = 0; s < slots; ++s) {
      if (!active_[s]) continue;
      device_guard guard(group_.device(s));
      launch_boxes<T, Rank>(unpack_[s], halo_stream(s), "mdarray halo unpack");
      done_[s] = events.record(group_.device(s), halo_stream(s));
    }
  }

  /// Later work on each slot's stream sees its halos filled.
  void end() {
    for (std::size_t s = 0; s < active_.size(); ++s) {
      if (!active_[s] || !done_[s]) continue;
      device_guard guard(group_.device(s));
      done_[s].order_before(group_.stream(s));
    }
  }

 private:
  static void copy(T* to, int to_device, const T* from, int from_device, std::size_t bytes, route kind,
                   cudaStream_t stream) {
    if (kind == route::peer)
      MULTIGPU_CUDA_TRY(cudaMemcpyPeerAsync(to, to_device, from, from_device, bytes, stream));
    else
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream));
    observe_work(stream, "mdarray halo copy");
  }

  /// Each slot stream waits for its own halo stream and for its neighbours': a neighbour's
  /// halo stream pulls from this slot's send buffer, which is freed on this slot's stream.
  void join_all() {
    group_resources& resources = resources_of(group_);
    std::vector<event_pool::handle> finished(active_.size());
    for (std::size_t s = 0; s < active_.size(); ++s) {
      if (!halo_streams_[s]) continue;
      device_guard guard(group_.device(s));
      finished[s] = resources.events().record(group_.device(s), halo_stream(s));
    }
    for (std::size_t s = 0; s < active_.size(); ++s) {
      if (!finished[s]) continue;
      device_guard guard(group_.device(s));
      finished[s].order_before(group_.stream(s));
      for (std::size_t n : neighbours_[s])
        if (finished[n]) finished[n].order_before(group_.stream(s));
    }
  }

  device_group group_;
  halo_exchange_plan<Rank> plan_;
  std::vector<bool> active_;
  std::vector<std::set<std::size_t>> neighbours_;
  // Declared before the buffers: released after them (the buffers free on the slot streams).
  std::vector<std::optional<multigpu::stream>> halo_streams_;
  std::vector<device_buffer<T>> send_;
  std::vector<device_buffer<T>> recv_;
  std::vector<std::vector<strided_box<T, Rank>>> pack_;
  std::vector<std::vector<strided_box<T, Rank>>> unpack_;
  std::vector<event_pool::handle> allocated_;  ///< per slot: its buffers allocated
  std::vector<event_pool::handle> done_;       ///< per slot: its last exchange's unpack
};

}  // namespace multigpu::detail
