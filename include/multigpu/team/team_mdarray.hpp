#pragma once
// An N-D array over a team of ranks (docs/mdarray.md#teams): the extents split over a grid of
// ranks, each rank's box over a grid of its slots (md_team_layout), so that a rank holds a
// distributed_mdarray of its box on its own device_group: hybrid ranks x slots, as team_vector.
// One halo plan of the whole array drives the exchange: boxes between two slots of a rank move
// as in one process (device copies), boxes between ranks go through the rank's pinned send
// block, one all_to_all_v of the communicator, and its pinned receive block. CUDA code: include
// from .cu files.
//
// Construction and every call here that names a team_mdarray are collective (team.hpp): every
// rank calls them in the same order, a rank-local failure ends the call on every rank, and a
// rank that asks for another shape gets std::invalid_argument on every rank.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/event_pool.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/team/team.hpp>
#include <multigpu/team/team_md_layout.hpp>
#include <multigpu/team/team_vector.hpp>
#include <multigpu/transfer/device_copy.hpp>
#include <multigpu/transfer/host_transfer.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <vector>

namespace multigpu {

/// How a team_mdarray is laid out. Zero grids (the default) are chosen: the rank grid with the
/// least halo surface for the team's size, and each rank's slot grid with the least surface for
/// the largest rank box (rank 0's) over the local group's slots. Every rank must pass the same
/// options and a group of as many slots.
template <class T, std::size_t Rank>
struct team_mdarray_options {
  md_index<Rank> halo{};                          ///< halo width per dimension
  std::array<md_boundary<T>, Rank> boundaries{};  ///< of the whole array; none by default
  md_index<Rank> rank_grid{};                     ///< ranks per dimension; all zero: chosen
  md_index<Rank> slot_grid{};                     ///< each rank's slots per dimension; all zero: chosen
};

template <class T, std::size_t Rank>
class team_mdarray;

namespace detail {

template <std::size_t Rank>
bool all_zero(const md_index<Rank>& i) noexcept {
  for (std::size_t v : i)
    if (v != 0) return false;
  return true;
}

/// FNV-1a over raw bytes: what ranks compare to agree on an array's shape in one word.
inline std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

/// The boxes of a team call that move between tiles (team_md_halo_engine, team_md_copy), in
/// three steps around the ranks' one collective:
///   send (rank-local)     each source slot packs its boxes into its device buffer in one launch;
///                         the runs bound for other ranks go to the pinned send block in its
///                         order (the host waits for them); the runs between the rank's own slots
///                         move device to device by the groups' routes (copy_between: peer, same
///                         device or staged, each ordered after both slots' work so far);
///   move (collective)     one all_to_all_v of the pinned blocks;
///   receive (rank-local)  the runs that arrived go from the pinned receive block to their slots
///                         (upload(), or the engine's own asynchronous uploads), then each target
///                         slot unpacks in one launch.
/// The owner fills in the boxes, runs and counts, then calls allocate_blocks().
template <class T, std::size_t Rank>
struct team_box_moves {
  std::vector<std::vector<strided_box<T, Rank>>> pack, unpack;  ///< per source / target slot
  std::vector<transfer::byte_move> within;                      ///< runs between the rank's own slots
  std::vector<transfer::device_piece> downloads, uploads;       ///< runs between ranks, in host-block order
  std::vector<std::size_t> send_counts, send_displs, recv_counts, recv_displs;  ///< elements, per rank
  pinned_buffer send_host, recv_host;
  bool pending = false;  ///< copies to or from a pinned block enqueued and not yet waited for

  void allocate_blocks(std::size_t sent, std::size_t received) {
    if (sent > 0) send_host = pinned_buffer(sent * sizeof(T), pinned_buffer::mapping::none);
    if (received > 0) recv_host = pinned_buffer(received * sizeof(T), pinned_buffer::mapping::none);
  }

  void send(const device_group& from, const device_group& to, const char* what) {
    for (std::size_t s = 0; s < pack.size(); ++s) {
      if (pack[s].empty()) continue;
      device_guard guard(from.device(s));
      launch_boxes<T, Rank>(pack[s], from.stream(s), what);
    }
    // The runs bound for other ranks, before the copies within the rank: the host waits for
    // these alone.
    pending = !downloads.empty();
    transfer::copy_devices_to_host(resources_of(from), send_host.data(), downloads);
    pending = false;
    if (!within.empty()) transfer::copy_between(from, to, within);
  }

  /// Collective: the runs between ranks (nothing for a team of one).
  void move(const team& t) {
    if (t.size() == 1) return;
    const auto span = [](const std::vector<std::size_t>& v) { return std::span<const std::size_t>(v); };
    t.comm().all_to_all_v(host_memory, static_cast<const T*>(send_host.data()), span(send_counts), span(send_displs),
                          static_cast<T*>(recv_host.data()), span(recv_counts), span(recv_displs));
  }

  /// The runs that arrived, onto their slots; the host waits for them.
  void upload(const device_group& to) {
    pending = !uploads.empty();
    transfer::copy_host_to_devices(resources_of(to), recv_host.data(), uploads);
    pending = false;
  }

  void unpack_all(const device_group& to, const char* what) {
    for (std::size_t s = 0; s < unpack.size(); ++s) {
      if (unpack[s].empty()) continue;
      device_guard guard(to.device(s));
      launch_boxes<T, Rank>(unpack[s], to.stream(s), what);
    }
  }

  /// After a step that failed half-way, before the pinned blocks are written again or freed:
  /// the host waits for the streams of the copies between them and the devices.
  void wait_if_pending() {
    if (!pending) return;
    std::vector<cudaStream_t> waited;
    for (const auto* pieces : {&downloads, &uploads})
      for (const transfer::device_piece& p : *pieces) {
        if (std::find(waited.begin(), waited.end(), p.stream) != waited.end()) continue;
        device_guard guard(p.device);
        MULTIGPU_CUDA_TRY(cudaStreamSynchronize(p.stream));
        waited.push_back(p.stream);
      }
    pending = false;
  }
};

/// The exchange of a team_mdarray's halos on one rank, built on the first exchange from one
/// halo plan of the whole array and this rank's routes through it (team_md_layout.hpp), as
/// team_box_moves, with two differences: the pack and unpack boxes also fill fixed boundaries,
/// and the uploads are not waited for (an event per slot marks them: the receive block is not
/// written again before they are done). No host wait on the receive side.
template <class T, std::size_t Rank>
class team_md_halo_engine {
 public:
  team_md_halo_engine(const team& t, const md_team_layout<Rank>& layout, const distributed_mdarray<T, Rank>& local,
                      const std::array<md_boundary<T>, Rank>& boundaries)
      : team_(t), group_(local.group()) {
    const std::size_t me = static_cast<std::size_t>(t.rank());
    std::array<boundary_kind, Rank> kinds{};
    for (std::size_t d = 0; d < Rank; ++d) kinds[d] = boundaries[d].kind;
    const halo_exchange_plan<Rank> plan = plan_halo_exchange(layout.tiles(), local.halo_widths(), kinds);
    md_team_routes routes = plan_team_routes(layout, plan, me);
    const std::size_t slots = local.tile_count();
    std::vector<std::size_t> slot_of(layout.tiles().slot_count(), no_slot);  // per tile: this rank's slot
    for (std::size_t s = 0; s < slots; ++s) slot_of[layout.tile_of(me, s)] = s;
    send_.resize(slots);
    recv_.resize(slots);
    moves_.pack.resize(slots);
    moves_.unpack.resize(slots);
    uploaded_.resize(slots);
    uploads_to_.assign(slots, false);
    std::vector<T*> bases(slots);
    std::vector<md_index<Rank>> padded(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      const std::size_t tile = layout.tile_of(me, s);
      bases[s] = local.tile(s).with_halo.data_handle();
      padded[s] = padded_extents(layout.tiles().tile_extents(tile), local.halo_widths());
      send_[s] = device_buffer<T>(plan.send_count[tile], group_.pool(s), group_.stream(s));
      recv_[s] = device_buffer<T>(plan.recv_count[tile], group_.pool(s), group_.stream(s));
    }
    for (std::size_t k : routes.local_pairs) {
      const auto& p = plan.pairs[k];
      if (p.src_slot == p.dst_slot) continue;
      const std::size_t from = slot_of[p.src_slot], to = slot_of[p.dst_slot];
      moves_.within.push_back(
          {from, send_[from].data() + p.send_offset, to, recv_[to].data() + p.recv_offset, p.count * sizeof(T)});
    }
    std::array<T, Rank> fill_values{};
    for (std::size_t d = 0; d < Rank; ++d) fill_values[d] = boundaries[d].value;
    plan_halo_boxes<T, Rank>(
        plan, [&](std::size_t tile) { return slot_of[tile]; }, no_slot, bases, padded, send_, recv_, fill_values,
        moves_.pack, moves_.unpack);
    // Both in their block's order (host offsets ascend).
    for (const auto& c : routes.sends) {
      const auto& p = plan.pairs[c.pair];
      const std::size_t s = slot_of[p.src_slot];
      moves_.downloads.push_back(
          {group_.device(s), group_.stream(s), send_[s].data() + p.send_offset, p.count * sizeof(T)});
    }
    for (const auto& c : routes.receives) {
      const auto& p = plan.pairs[c.pair];
      const std::size_t s = slot_of[p.dst_slot];
      moves_.uploads.push_back(
          {group_.device(s), group_.stream(s), recv_[s].data() + p.recv_offset, p.count * sizeof(T)});
      uploads_to_[s] = true;
    }
    moves_.send_counts = std::move(routes.send_counts);
    moves_.send_displs = std::move(routes.send_displs);
    moves_.recv_counts = std::move(routes.recv_counts);
    moves_.recv_displs = std::move(routes.recv_displs);
    moves_.allocate_blocks(routes.sent, routes.received);
  }

  team_md_halo_engine(const team_md_halo_engine&) = delete;
  team_md_halo_engine& operator=(const team_md_halo_engine&) = delete;

  /// The last uploads read the pinned receive block, freed here, and a send side that failed
  /// may have left downloads into the send block: the host waits for them. (The device buffers
  /// go back to their pools on their own streams, after every copy that reads them:
  /// copy_between orders the senders' streams after its copies.)
  ~team_md_halo_engine() {
    try {
      wait_for_host_copies();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "multigpu: team_mdarray: waiting for the last halo uploads failed: %s\n", e.what());
    }
  }

  void send_side() {
    // The last exchange's uploads read the receive block, which move() writes.
    wait_for_host_copies();
    moves_.send(group_, group_, "team mdarray halo pack");
  }

  /// Collective.
  void move() { moves_.move(team_); }

  void receive_side() {
    event_pool& events = resources_of(group_).events();
    moves_.pending = !moves_.uploads.empty();  // until every slot's mark is recorded
    const auto* arrived = static_cast<const std::byte*>(moves_.recv_host.data());
    for (const transfer::device_piece& p : moves_.uploads) {
      device_guard guard(p.device);
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(p.data, arrived, p.bytes, cudaMemcpyHostToDevice, p.stream));
      observe_work(p.stream, "team mdarray halo upload");
      arrived += p.bytes;
    }
    for (std::size_t s = 0; s < uploaded_.size(); ++s) {
      if (!uploads_to_[s]) continue;
      device_guard guard(group_.device(s));
      uploaded_[s] = events.record(group_.device(s), group_.stream(s));
    }
    moves_.pending = false;
    moves_.unpack_all(group_, "team mdarray halo unpack");
  }

 private:
  static constexpr std::size_t no_slot = ~std::size_t{0};

  /// The host waits for every slot's last uploads, and for the copies between a pinned block
  /// and the devices of a side that failed half-way (without their marks: by the streams).
  void wait_for_host_copies() {
    for (event_pool::handle& marked : uploaded_)
      if (marked) {
        marked.synchronize();
        marked = {};
      }
    moves_.wait_if_pending();
  }

  team team_;
  device_group group_;
  std::vector<device_buffer<T>> send_;
  std::vector<device_buffer<T>> recv_;
  team_box_moves<T, Rank> moves_;
  std::vector<bool> uploads_to_;              ///< per slot: whether runs from other ranks arrive there
  std::vector<event_pool::handle> uploaded_;  ///< per slot: its last uploads, until waited for
};

}  // namespace detail

template <class T, std::size_t Rank>
class team_mdarray {
 public:
  using value_type = T;
  using index_type = md_index<Rank>;
  using options_type = team_mdarray_options<T, Rank>;
  static constexpr std::size_t rank() noexcept { return Rank; }

  /// Collective. `value` everywhere, halos included; this rank's box on `local_group`.
  team_mdarray(multigpu::team t, const index_type& extents, const T& value, device_group local_group = default_group(),
               const options_type& options = {})
      : team_(std::move(t)), options_(options) {
    build(extents, std::move(local_group), value, [](distributed_mdarray<T, Rank>&) {});
  }

  /// Collective. The elements of the whole array in row-major order, the same on every rank
  /// (host.size() must be the product of the extents); each rank uploads its box. Halos hold
  /// T{}. Waits for the upload.
  team_mdarray(multigpu::team t, const index_type& extents, std::span<const T> host,
               device_group local_group = default_group(), const options_type& options = {})
      : team_(std::move(t)), options_(options) {
    build(extents, std::move(local_group), T{}, [&](distributed_mdarray<T, Rank>& local) {
      MULTIGPU_EXPECTS(host.size() == detail::product(extents),
                       detail::concat("team_mdarray: a host array of ", host.size(), " elements for extents (",
                                      detail::format_index(extents, " x "), ")"));
      local.copy_from_host(box_of(host, extents, layout_.ranks().tile_offset(me()), local.extents()));
    });
  }

  team_mdarray(team_mdarray&&) noexcept = default;
  /// The old exchange goes first (its streams joined) while the old tiles still exist.
  team_mdarray& operator=(team_mdarray&& other) noexcept {
    if (this != &other) {
      halos_ = std::move(other.halos_);
      local_ = std::move(other.local_);
      team_ = std::move(other.team_);
      options_ = std::move(other.options_);
      layout_ = std::move(other.layout_);
    }
    return *this;
  }

  const multigpu::team& team() const noexcept { return team_; }
  const index_type& extents() const noexcept { return layout_.extents(); }
  std::size_t size() const noexcept { return detail::product(extents()); }
  /// Where every rank's box and every tile lie.
  const md_team_layout<Rank>& layout() const noexcept { return layout_; }
  /// The options with the grids actually used.
  const options_type& options() const noexcept { return options_; }
  const index_type& halo_widths() const noexcept { return options_.halo; }
  /// The global index of this rank's first element.
  index_type offset() const { return layout_.ranks().tile_offset(me()); }

  /// This rank's box, on its local group: local index i is global index offset() + i. Its
  /// tiles' halos are this array's (exchange_halos of the team_mdarray fills them; the local
  /// array's own boundaries are none). Use any single-process call that keeps its extents.
  distributed_mdarray<T, Rank>& local() noexcept { return *local_; }
  const distributed_mdarray<T, Rank>& local() const noexcept { return *local_; }

  /// Collective: the element at global index i, on every rank (the rank that holds it reads it;
  /// one all_gather). std::out_of_range outside the extents, std::invalid_argument on every rank
  /// when the ranks asked for indices held by different ranks. Waits.
  T get(const index_type& i) const {
    const auto held = detail::gather_collective<T>(team_, team_operation::mdarray_get, sizeof(T), [&] {
      const auto located = layout_.ranks().locate(i);
      return located.first == me() ? std::optional<T>(local_->get(located.second)) : std::nullopt;
    });
    std::size_t holders = 0;
    T value{};
    for (const std::optional<T>& h : held)
      if (h) {
        ++holders;
        value = *h;
      }
    MULTIGPU_EXPECTS(holders == 1, detail::concat("team_mdarray::get: the ranks asked for different elements (",
                                                  holders, " ranks hold the one they were asked for)"));
    return value;
  }
  /// Writes the element at global index i if this rank holds it (in order on its slot's
  /// stream), and does nothing on the other ranks: not collective, so any rank may call it.
  /// std::out_of_range outside the extents.
  void set(const index_type& i, const T& value) {
    const auto [owner, local] = layout_.ranks().locate(i);
    if (owner == me()) local_->set(local, value);
  }

  /// Collective: the whole array, row-major, on every rank. Waits.
  std::vector<T> to_host() const {
    const std::size_t ranks = static_cast<std::size_t>(team_.size());
    std::vector<T> mine =
        detail::run_collective(team_, team_operation::mdarray_to_host, sizeof(T), [&] { return local_->to_host(); });
    std::vector<std::size_t> send_counts(ranks, mine.size()), send_displs(ranks, 0), recv_counts(ranks),
        recv_displs(ranks);
    std::size_t total = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      recv_counts[r] = detail::product(layout_.ranks().tile_extents(r));
      recv_displs[r] = total;
      total += recv_counts[r];
    }
    std::vector<T> boxes(total);
    const auto span = [](const std::vector<std::size_t>& v) { return std::span<const std::size_t>(v); };
    team_.comm().all_to_all_v(host_memory, mine.data(), span(send_counts), span(send_displs), boxes.data(),
                              span(recv_counts), span(recv_displs));
    std::vector<T> whole(size());
    for (std::size_t r = 0; r < ranks; ++r) {
      const index_type o = layout_.ranks().tile_offset(r);
      const index_type e = layout_.ranks().tile_extents(r);
      std::size_t k = recv_displs[r];
      for_each_box_row(e, [&](const index_type& row, std::size_t length) {
        index_type g{};
        for (std::size_t d = 0; d < Rank; ++d) g[d] = o[d] + row[d];
        std::memcpy(whole.data() + linear(extents(), g), boxes.data() + k, length * sizeof(T));
        k += length;
      });
    }
    return whole;
  }

  /// Internal: the exchange (exchange_halos and stencil_transform), built on first use.
  detail::team_md_halo_engine<T, Rank>& halo_engine() const {
    if (!halos_)
      halos_ = std::make_unique<detail::team_md_halo_engine<T, Rank>>(team_, layout_, *local_, options_.boundaries);
    return *halos_;
  }

 private:
  std::size_t me() const noexcept { return static_cast<std::size_t>(team_.rank()); }

  static std::size_t linear(const index_type& n, const index_type& i) noexcept {
    std::size_t l = 0;
    for (std::size_t d = 0; d < Rank; ++d) l = l * n[d] + i[d];
    return l;
  }
  /// f(start, length) for every row (along the last dimension) of a box of extents e, row-major.
  template <class F>
  static void for_each_box_row(const index_type& e, F&& f) {
    if (detail::product(e) == 0) return;
    index_type i{};
    while (true) {
      f(i, e[Rank - 1]);
      std::size_t d = Rank - 1;
      while (d-- > 0) {
        if (++i[d] < e[d]) break;
        i[d] = 0;
        if (d == 0) return;
      }
      if (Rank == 1) return;
    }
  }
  /// The box at `o` of extents `e` of a row-major host array of extents `n`, row-major.
  static std::vector<T> box_of(std::span<const T> host, const index_type& n, const index_type& o, const index_type& e) {
    std::vector<T> box;
    box.reserve(detail::product(e));
    for_each_box_row(e, [&](const index_type& row, std::size_t length) {
      index_type g{};
      for (std::size_t d = 0; d < Rank; ++d) g[d] = o[d] + row[d];
      const T* first = host.data() + linear(n, g);
      box.insert(box.end(), first, first + length);
    });
    return box;
  }

  /// The rank-local step (grids, the local array, `then(local)`, the halo check of the whole
  /// array) under the team's entry, then one all_gather in which the ranks agree on the shape.
  template <class Then>
  void build(const index_type& extents, device_group local_group, const T& value, Then&& then) {
    const std::size_t ranks = static_cast<std::size_t>(team_.size());
    const std::size_t slots = local_group.size();
    local_ = detail::run_collective(team_, team_operation::mdarray_construct, sizeof(T), [&] {
      if (detail::all_zero(options_.rank_grid))
        options_.rank_grid = md_decomposition<Rank>::choose_grid(extents, ranks, options_.halo);
      MULTIGPU_EXPECTS(
          detail::product(options_.rank_grid) == ranks,
          detail::concat("team_mdarray: the rank grid (", detail::format_index(options_.rank_grid, " x "), ") has ",
                         detail::product(options_.rank_grid), " places but the team has ", ranks, " ranks"));
      const md_decomposition<Rank> boxes(extents, options_.rank_grid);
      if (detail::all_zero(options_.slot_grid))
        options_.slot_grid = md_decomposition<Rank>::choose_grid(boxes.tile_extents(0), slots, options_.halo);
      MULTIGPU_EXPECTS(detail::product(options_.slot_grid) == slots,
                       detail::concat("team_mdarray: the slot grid (", detail::format_index(options_.slot_grid, " x "),
                                      ") has ", detail::product(options_.slot_grid), " places but rank ", me(),
                                      "'s group has ", slots, " slots"));
      layout_ = md_team_layout<Rank>(extents, options_.rank_grid, options_.slot_grid);
      std::array<boundary_kind, Rank> kinds{};
      for (std::size_t d = 0; d < Rank; ++d) kinds[d] = options_.boundaries[d].kind;
      check_halo_fits(layout_.tiles(), options_.halo, kinds);  // std::length_error naming the tile
      mdarray_options<T, Rank> local_options;
      local_options.halo = options_.halo;
      local_options.grid = options_.slot_grid;
      auto local = std::make_unique<distributed_mdarray<T, Rank>>(layout_.ranks().tile_extents(me()), value,
                                                                  std::move(local_group), local_options);
      then(*local);
      return local;
    });
    // Every rank must have asked for the same array.
    std::uint64_t h = 14695981039346656037ull;
    h = detail::fnv1a(h, extents.data(), sizeof(extents));
    h = detail::fnv1a(h, options_.halo.data(), sizeof(options_.halo));
    h = detail::fnv1a(h, options_.rank_grid.data(), sizeof(options_.rank_grid));
    h = detail::fnv1a(h, options_.slot_grid.data(), sizeof(options_.slot_grid));
    for (const md_boundary<T>& b : options_.boundaries) {
      h = detail::fnv1a(h, &b.kind, sizeof(b.kind));
      if (b.kind == boundary_kind::fixed) h = detail::fnv1a(h, &b.value, sizeof(T));
    }
    const std::vector<std::uint64_t> all = team_.comm().all_gather(h);
    for (std::size_t r = 0; r < all.size(); ++r)
      MULTIGPU_EXPECTS(all[r] == all[0],
                       detail::concat("team_mdarray: rank ", r,
                                      " asked for another array than rank 0 (extents, halo "
                                      "widths, boundaries, rank grid or slot grid differ; rank ",
                                      me(), " has extents (", detail::format_index(extents, " x "), "), slot grid (",
                                      detail::format_index(options_.slot_grid, " x "), "))"));
  }

  multigpu::team team_;
  options_type options_;
  md_team_layout<Rank> layout_;
  std::unique_ptr<distributed_mdarray<T, Rank>> local_;
  // After the local array: released first, so that its streams' joins come before the tiles go.
  mutable std::unique_ptr<detail::team_md_halo_engine<T, Rank>> halos_;
};

// ---- halos and stencils -----------------------------------------------------------------------

/// Collective. Fills every halo of `a` (faces, edges and corners, by the array's boundaries):
/// between this rank's slots as in one process, across ranks through pinned host blocks and
/// one all_to_all_v. The host waits for the outgoing faces to reach the host and for the
/// communicator; the unpack is enqueued, not waited for.
template <class T, std::size_t Rank>
void exchange_halos(team_mdarray<T, Rank>& a) {
  const nvtx_range range("team mdarray halo exchange", a.size());
  auto* engine = detail::run_collective(a.team(), team_operation::mdarray_exchange_halos, sizeof(T),
                                        [&]() -> detail::team_md_halo_engine<T, Rank>* {
                                          auto& e = a.halo_engine();
                                          e.send_side();
                                          return &e;
                                        });
  engine->move();
  detail::agreed_step(a.team(), team_operation::mdarray_exchange_halos, "unpack", [&] { engine->receive_side(); });
}

/// Collective. out(i) = f(acc) at every interior index of the whole array, as the
/// single-process stencil_transform (acc.index() is the global index). Overlapped by default:
/// each tile's inner region is enqueued before the ranks exchange, so the GPUs compute while
/// the host talks to the other ranks; the boundary strips follow the unpack. `out` must have
/// in's layout on the same team (std::invalid_argument otherwise).
template <class T, class U, std::size_t Rank, class F>
void stencil_transform(team_mdarray<T, Rank>& in, team_mdarray<U, Rank>& out, F f,
                       stencil_schedule schedule = stencil_schedule::overlapped) {
  const nvtx_range range("team mdarray stencil_transform", in.size());
  detail::expect_same_team("stencil_transform", in.team(), out.team());
  MULTIGPU_EXPECTS(in.layout() == out.layout(), "stencil_transform: the team arrays are laid out differently");
  MULTIGPU_EXPECTS(static_cast<const void*>(&in) != static_cast<const void*>(&out),
                   "stencil_transform: the output must be another array than the input");
  const md_index<Rank> origin = in.offset();
  const md_index<Rank> widths = in.halo_widths();
  auto& local_in = in.local();
  auto& local_out = out.local();
  const bool overlapped = schedule == stencil_schedule::overlapped;
  const auto launch = [&](bool inner) {
    for (std::size_t s = 0; s < local_in.tile_count(); ++s) {
      const auto tile = local_in.tile(s);
      if (tile.empty()) continue;
      device_guard guard(tile.device);
      const auto step = detail::stencil_step(local_in, local_out, f, s, origin);
      const md_index<Rank> extents = local_in.layout().tile_extents(s);
      if (!overlapped)
        detail::launch_points(md_box<Rank>{{}, extents}, step, tile.stream, "team mdarray stencil");
      else if (inner)
        detail::launch_points(stencil_inner_region(extents, widths), step, tile.stream,
                              "team mdarray stencil interior");
      else
        for (const md_box<Rank>& box : stencil_outer_regions(extents, widths))
          detail::launch_points(box, step, tile.stream, "team mdarray stencil boundary");
    }
  };
  auto* engine = detail::run_collective(in.team(), team_operation::mdarray_stencil, sizeof(T),
                                        [&]() -> detail::team_md_halo_engine<T, Rank>* {
                                          // The local arrays must share a group too: on one rank
                                          // only, perhaps, so inside the agreed step.
                                          detail::expect_same_tiles(local_in, local_out, "stencil_transform");
                                          auto& e = in.halo_engine();
                                          e.send_side();
                                          if (overlapped) launch(true);
                                          return &e;
                                        });
  engine->move();
  detail::agreed_step(in.team(), team_operation::mdarray_stencil, "unpack and the stencil", [&] {
    engine->receive_side();
    launch(false);
  });
}

// ---- the algorithm set --------------------------------------------------------------------------

/// fn(tile) for each non-empty tile of this rank (as for_each_tile), with tile.offset global.
/// Rank-local: no message.
template <class T, std::size_t Rank, class F>
void for_each_tile(team_mdarray<T, Rank>& a, F&& fn) {
  const md_index<Rank> origin = a.offset();
  for_each_tile(a.local(), [&](md_tile<T, Rank> tile) {
    for (std::size_t d = 0; d < Rank; ++d) tile.offset[d] += origin[d];
    fn(tile);
  });
}

/// Every element (interiors). Rank-local: no message, no host wait.
template <class T, std::size_t Rank>
void fill(team_mdarray<T, Rank>& a, const T& value) {
  fill(a.local(), value);
}

/// out(i) = f(in(i)) over the interiors; in's layout and team (std::invalid_argument
/// otherwise); in place allowed. Rank-local: no message, no host wait.
template <class T, class U, std::size_t Rank, class F>
void transform(const team_mdarray<T, Rank>& in, team_mdarray<U, Rank>& out, F f) {
  detail::expect_same_team("transform", in.team(), out.team());
  MULTIGPU_EXPECTS(in.layout() == out.layout(), "transform: the team arrays are laid out differently");
  transform(in.local(), out.local(), f);
}

template <class A, class B, class U, std::size_t Rank, class F>
void transform(const team_mdarray<A, Rank>& a, const team_mdarray<B, Rank>& b, team_mdarray<U, Rank>& out, F f) {
  detail::expect_same_team("transform", a.team(), b.team());
  detail::expect_same_team("transform", a.team(), out.team());
  MULTIGPU_EXPECTS(a.layout() == b.layout() && a.layout() == out.layout(),
                   "transform: the team arrays are laid out differently");
  transform(a.local(), b.local(), out.local(), f);
}

namespace detail {
/// This rank's partial of transform(x) over its box, without an initial value: every slot's
/// partial (as reduce_replicated computes it), read back in one batch and folded in slot order
/// on the host (none for an empty box).
template <class T, std::size_t Rank, class U, class Op, class F>
std::optional<U> team_md_partial(const distributed_mdarray<T, Rank>& local, Op op, F transform) {
  replicated<U> out(local.group());
  tile_partials(local, op, out, transformed_tiles<U>(local, transform));
  const device_group& g = local.group();
  std::vector<transfer::element_place> places(local.tile_count());
  for (std::size_t s = 0; s < places.size(); ++s) places[s] = {g.device(s), g.stream(s), out.partials_of(s) + s, false};
  std::vector<partial_value<U>> partials(places.size());
  transfer::read_elements(resources_of(g), places, sizeof(partial_value<U>), partials.data());
  std::optional<U> partial;
  for (const partial_value<U>& p : partials)
    if (p.has) partial = partial ? static_cast<U>(op(*partial, p.value)) : p.value;
  return partial;
}
}  // namespace detail

namespace detail {
/// init op every rank's partial (team_md_partial, after `check()` in the same rank-local step),
/// in rank order, on every rank: one all_gather.
template <class T, std::size_t Rank, class U, class Op, class F, class Check>
U team_md_transform_reduce(const team_mdarray<T, Rank>& a, team_operation op, U init, Op reduce_op, F transform,
                           Check check) {
  const auto partials = gather_collective<U>(a.team(), op, sizeof(T), [&] {
    check();
    return team_md_partial<T, Rank, U>(a.local(), reduce_op, transform);
  });
  U result = init;
  for (const std::optional<U>& p : partials)
    if (p) result = static_cast<U>(reduce_op(result, *p));
  return result;
}
}  // namespace detail

/// Collective: init op transform(x) op ... over the whole array, on every rank (waits).
/// reduce_op must be associative and commutative, and callable on host and device.
template <class T, std::size_t Rank, class U, class Op, class F>
U transform_reduce(const team_mdarray<T, Rank>& a, U init, Op reduce_op, F transform) {
  const nvtx_range range("team mdarray transform_reduce", a.size());
  return detail::team_md_transform_reduce(a, team_operation::mdarray_reduce, init, reduce_op, transform, [] {});
}

template <class T, std::size_t Rank, class U, class Op = cuda::std::plus<>>
U reduce(const team_mdarray<T, Rank>& a, U init, Op op = {}) {
  return transform_reduce(a, init, op, detail::identity_op{});
}

/// Collective: transform_reduce over the whole array, written into every copy of `out` (a
/// replicated value on this rank's local group, std::invalid_argument otherwise), each in order
/// on its slot's stream, for kernels that read it through out.ref(s), as the single-process
/// form. Unlike it, the host waits: for this rank's partials and one all_gather.
template <class T, std::size_t Rank, class U, class Op, class F>
void transform_reduce_replicated(const team_mdarray<T, Rank>& a, U init, Op reduce_op, F transform,
                                 replicated<U>& out) {
  const nvtx_range range("team mdarray reduce_replicated", a.size());
  const U result =
      detail::team_md_transform_reduce(a, team_operation::mdarray_reduce_replicated, init, reduce_op, transform, [&] {
        MULTIGPU_EXPECTS(out.group() == a.local().group(),
                         "reduce_replicated: the result must be on the group of the rank's local array");
      });
  detail::agreed_step(a.team(), team_operation::mdarray_reduce_replicated, "write the replicated value",
                      [&] { out.assign(result); });
}

template <class T, std::size_t Rank, class U, class Op>
void reduce_replicated(const team_mdarray<T, Rank>& a, U init, Op op, replicated<U>& out) {
  transform_reduce_replicated(a, init, op, detail::identity_op{}, out);
}

namespace detail {
/// One copy between two team_mdarrays of the same extents and any layouts, on one rank: every
/// overlap of a source tile with a target tile (plan_redistribution over the whole grids) is
/// packed on its source slot's stream into the slot's send buffer; overlaps within the rank go
/// device to device (copy_between), overlaps between ranks through pinned host blocks and one
/// all_to_all_v; each target slot unpacks in one launch. Built in a rank-local step (it
/// allocates).
template <class T, std::size_t Rank>
class team_md_copy {
 public:
  team_md_copy(const team_mdarray<T, Rank>& from, team_mdarray<T, Rank>& to)
      : team_(from.team()), from_(from.local()), to_(to.local()) {
    const std::size_t me = static_cast<std::size_t>(team_.rank());
    const std::size_t ranks = static_cast<std::size_t>(team_.size());
    const auto moves = plan_redistribution(from.layout().tiles(), to.layout().tiles());
    const std::size_t src_slots = from_.tile_count(), dst_slots = to_.tile_count();
    std::vector<std::size_t> send_count(src_slots, 0), recv_count(dst_slots, 0);
    struct placed {
      const md_redistribution_move<Rank>* move;
      std::size_t src_slot, dst_slot, src_rank, dst_rank, send_offset, recv_offset;
    };
    std::vector<placed> mine;
    for (const auto& m : moves) {
      const auto [src_rank, src_slot] = from.layout().owner(m.src_slot);
      const auto [dst_rank, dst_slot] = to.layout().owner(m.dst_slot);
      if (src_rank != me && dst_rank != me) continue;
      placed p{&m, src_slot, dst_slot, src_rank, dst_rank, 0, 0};
      if (src_rank == me) {
        p.send_offset = send_count[src_slot];
        send_count[src_slot] += m.global.count();
      }
      if (dst_rank == me) {
        p.recv_offset = recv_count[dst_slot];
        recv_count[dst_slot] += m.global.count();
      }
      mine.push_back(p);
    }
    send_.resize(src_slots);
    recv_.resize(dst_slots);
    moves_.pack.resize(src_slots);
    moves_.unpack.resize(dst_slots);
    for (std::size_t s = 0; s < src_slots; ++s)
      if (send_count[s] > 0) send_[s] = device_buffer<T>(send_count[s], from_.group().pool(s), from_.group().stream(s));
    for (std::size_t s = 0; s < dst_slots; ++s)
      if (recv_count[s] > 0) recv_[s] = device_buffer<T>(recv_count[s], to_.group().pool(s), to_.group().stream(s));
    const md_index<Rank> from_origin = from.offset(), to_origin = to.offset();
    for (auto* counts : {&moves_.send_counts, &moves_.send_displs, &moves_.recv_counts, &moves_.recv_displs})
      counts->assign(ranks, 0);
    for (const placed& p : mine) {
      const auto& m = *p.move;
      if (p.src_rank == me) {
        const auto tile = from_.tile(p.src_slot);
        md_index<Rank> origin{};
        for (std::size_t d = 0; d < Rank; ++d) origin[d] = from_origin[d] + tile.offset[d];
        moves_.pack[p.src_slot].push_back(make_box<T, Rank>(
            tile.with_halo.data_handle(), padded_extents(from_.layout().tile_extents(p.src_slot), from_.halo_widths()),
            padded_position(m.global.start, origin, from_.halo_widths()), send_[p.src_slot].data() + p.send_offset,
            m.global.extent, {}, m.global.extent));
      }
      if (p.dst_rank == me) {
        const auto tile = to_.tile(p.dst_slot);
        md_index<Rank> origin{};
        for (std::size_t d = 0; d < Rank; ++d) origin[d] = to_origin[d] + tile.offset[d];
        moves_.unpack[p.dst_slot].push_back(make_box<T, Rank>(
            recv_[p.dst_slot].data() + p.recv_offset, m.global.extent, {}, tile.with_halo.data_handle(),
            padded_extents(to_.layout().tile_extents(p.dst_slot), to_.halo_widths()),
            padded_position(m.global.start, origin, to_.halo_widths()), m.global.extent));
      }
      if (p.src_rank == me && p.dst_rank == me)
        moves_.within.push_back({p.src_slot, send_[p.src_slot].data() + p.send_offset, p.dst_slot,
                           recv_[p.dst_slot].data() + p.recv_offset, m.global.count() * sizeof(T)});
    }
    // Between ranks: sends by receiving rank, receives by sending rank, each in plan order.
    std::size_t sent = 0, received = 0;
    for (std::size_t r = 0; r < ranks; ++r) {
      moves_.send_displs[r] = sent;
      moves_.recv_displs[r] = received;
      if (r == me) continue;
      for (const placed& p : mine) {
        const std::size_t n = p.move->global.count();
        if (p.src_rank == me && p.dst_rank == r) {  // pieces in host-block order
          moves_.downloads.push_back({from_.group().device(p.src_slot), from_.group().stream(p.src_slot),
                                send_[p.src_slot].data() + p.send_offset, n * sizeof(T)});
          sent += n;
          moves_.send_counts[r] += n;
        }
        if (p.dst_rank == me && p.src_rank == r) {
          moves_.uploads.push_back({to_.group().device(p.dst_slot), to_.group().stream(p.dst_slot),
                              recv_[p.dst_slot].data() + p.recv_offset, n * sizeof(T)});
          received += n;
          moves_.recv_counts[r] += n;
        }
      }
    }
    moves_.allocate_blocks(sent, received);
  }

  /// A copy that failed half-way may have left copies between a pinned block and the devices:
  /// the host waits for their streams before the blocks are freed.
  ~team_md_copy() {
    try {
      moves_.wait_if_pending();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "multigpu: team_mdarray copy: waiting for its host copies failed: %s\n", e.what());
    }
  }
  team_md_copy(const team_md_copy&) = delete;
  team_md_copy& operator=(const team_md_copy&) = delete;

  void send_side() { moves_.send(from_.group(), to_.group(), "team mdarray copy pack"); }
  /// Collective.
  void move() { moves_.move(team_); }
  /// Uploads (the host waits for them: their pinned block goes with this object) and unpacks.
  void receive_side() {
    moves_.upload(to_.group());
    moves_.unpack_all(to_.group(), "team mdarray copy unpack");
  }

 private:
  team team_;
  const distributed_mdarray<T, Rank>& from_;
  distributed_mdarray<T, Rank>& to_;
  std::vector<device_buffer<T>> send_, recv_;
  team_box_moves<T, Rank> moves_;
};
}  // namespace detail

/// Collective. Copies `from` onto `to` (same team and extents, std::invalid_argument
/// otherwise), whatever their rank grids, slot grids, local groups and halo widths: slabs to
/// pencils across ranks, the redistribution an FFT needs. Halos are not copied. Each overlap of
/// two tiles is one packed box: within a rank one device copy, between ranks a run of one
/// all_to_all_v through pinned host memory. Waits for the exchange.
template <class T, std::size_t Rank>
void copy(const team_mdarray<T, Rank>& from, team_mdarray<T, Rank>& to) {
  const nvtx_range range("team mdarray copy", from.size());
  detail::expect_same_team("copy", from.team(), to.team());
  MULTIGPU_EXPECTS(from.extents() == to.extents(),
                   detail::concat("copy: team arrays of extents (", detail::format_index(from.extents(), " x "),
                                  ") and (", detail::format_index(to.extents(), " x "), ")"));
  std::optional<detail::team_md_copy<T, Rank>> plan;
  detail::run_collective(from.team(), team_operation::mdarray_copy, sizeof(T), [&] {
    plan.emplace(from, to);
    plan->send_side();
  });
  plan->move();
  detail::agreed_step(from.team(), team_operation::mdarray_copy, "unpack", [&] { plan->receive_side(); });
}

/// Collective: whether a and b (same layout and team, std::invalid_argument otherwise) hold the
/// same elements, on every rank (waits).
template <class T, std::size_t Rank>
bool equal(const team_mdarray<T, Rank>& a, const team_mdarray<T, Rank>& b) {
  detail::expect_same_team("equal", a.team(), b.team());
  MULTIGPU_EXPECTS(a.layout() == b.layout(), "equal: the team arrays are laid out differently");
  const auto mine = detail::gather_collective<std::uint8_t>(a.team(), team_operation::mdarray_equal, sizeof(T), [&] {
    return std::optional<std::uint8_t>(equal(a.local(), b.local()) ? 1 : 0);
  });
  for (const std::optional<std::uint8_t>& m : mine)
    if (!m || *m == 0) return false;
  return true;
}

}  // namespace multigpu
