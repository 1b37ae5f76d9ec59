#pragma once
// A Rank-dimensional array sharded over the slots of a device_group (docs/mdarray.md): the
// extents split over a grid of slots, one row-major tile per slot with a halo of width w[d]
// on both sides of every dimension, each tile allocated on its slot's stream as a vector's
// segments are. Work on a tile is enqueued on its slot's stream; calls that hand data to the
// host wait for exactly the streams they read. CUDA code: include from .cu files.

#include <multigpu/container/detail/fill_bytes.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/mdarray/decomposition.hpp>
#include <multigpu/mdarray/detail/halo_engine.hpp>
#include <multigpu/mdarray/detail/tile_kernels.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/transfer/element_copy.hpp>

#include <cuda/std/mdspan>

#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {

/// One dimension's boundary: its kind, and for boundary_kind::fixed the value its outer
/// halos hold.
template <class T>
struct md_boundary {
  boundary_kind kind = boundary_kind::none;
  T value{};
};

/// How an array is laid out. A zero grid (the default) takes the grid with the least halo
/// surface for the group (md_decomposition::choose_grid); a given grid must have as many
/// places as the group has slots.
template <class T, std::size_t Rank>
struct mdarray_options {
  md_index<Rank> halo{};                           ///< halo width per dimension
  std::array<md_boundary<T>, Rank> boundaries{};   ///< none in every dimension by default
  md_index<Rank> grid{};                           ///< slots per dimension; all zero: chosen
};

/// One slot's tile, as for_each_tile hands it over: where it runs, its storage with the halo
/// (layout_right over the padded extents) and without (a strided view of the interior), and
/// the global index of its first interior element. An empty tile has no storage.
template <class T, std::size_t Rank>
struct md_tile {
  using extents_type = cuda::std::dextents<std::size_t, Rank>;
  using padded_span = cuda::std::mdspan<T, extents_type, cuda::std::layout_right>;
  using interior_span = cuda::std::mdspan<T, extents_type, cuda::std::layout_stride>;

  std::size_t slot = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  padded_span with_halo;
  interior_span interior;
  md_index<Rank> offset{};  ///< global index of interior(0, ..., 0)
  md_index<Rank> halo{};    ///< the halo width per dimension
  bool empty() const noexcept { return interior.size() == 0; }
  /// What kernels take: interior index i at data[sum((i[d] + halo[d]) * stride[d])].
  detail::tile_ref<T, Rank> ref() const noexcept {
    detail::tile_ref<T, Rank> r;
    r.data = with_halo.data_handle();
    for (std::size_t d = 0; d < Rank; ++d) {
      r.stride[d] = with_halo.mapping().stride(d);
      r.halo[d] = halo[d];
    }
    return r;
  }
};

template <class T, std::size_t Rank>
class distributed_mdarray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "multigpu::distributed_mdarray<T, Rank> needs a trivially copyable, default-constructible T: "
                "elements move between host and devices as raw bytes");
  static_assert(Rank >= 1, "multigpu::distributed_mdarray needs at least one dimension");

 public:
  using value_type = T;
  using index_type = md_index<Rank>;
  using options_type = mdarray_options<T, Rank>;
  using tile_type = md_tile<T, Rank>;
  static constexpr std::size_t rank() noexcept { return Rank; }

  /// T{} everywhere, halos included.
  explicit distributed_mdarray(const index_type& extents, device_group group = default_group(),
                               const options_type& options = {})
      : distributed_mdarray(extents, T{}, std::move(group), options) {}

  /// `value` everywhere, halos included.
  distributed_mdarray(const index_type& extents, const T& value, device_group group = default_group(),
                      const options_type& options = {})
      : group_(std::move(group)), options_(options) {
    setup(extents);
    fill_storage(value);
  }

  /// The elements of a host array in row-major order (host.size() must be the product of the
  /// extents, std::invalid_argument otherwise); halos hold T{}. Waits for the upload.
  distributed_mdarray(const index_type& extents, std::span<const T> host, device_group group = default_group(),
                      const options_type& options = {})
      : group_(std::move(group)), options_(options) {
    setup(extents);
    fill_storage(T{});
    copy_from_host(host);
  }

  /// Deep copy on the same group and layout, tile by tile on each slot's stream (halos included).
  distributed_mdarray(const distributed_mdarray& other) : group_(other.group_), options_(other.options_) {
    setup(other.extents());
    for (std::size_t s = 0; s < tiles_.size(); ++s) {
      if (tiles_[s].size() == 0) continue;
      device_guard guard(group_.device(s));
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(tiles_[s].data(), other.tiles_[s].data(), tiles_[s].size_bytes(),
                                        cudaMemcpyDeviceToDevice, group_.stream(s)));
    }
  }
  distributed_mdarray(distributed_mdarray&&) noexcept = default;
  distributed_mdarray& operator=(const distributed_mdarray& other) {
    if (this != &other) {
      distributed_mdarray copy(other);
      swap(copy);
    }
    return *this;
  }
  /// Through a swap, so that the old contents go in the destructor's order (halo streams
  /// joined before the tiles are freed).
  distributed_mdarray& operator=(distributed_mdarray&& other) noexcept {
    if (this != &other) {
      distributed_mdarray moved(std::move(other));
      swap(moved);
    }
    return *this;
  }
  ~distributed_mdarray() = default;

  void swap(distributed_mdarray& other) noexcept {
    std::swap(group_, other.group_);
    std::swap(options_, other.options_);
    std::swap(layout_, other.layout_);
    std::swap(tiles_, other.tiles_);
    std::swap(halos_, other.halos_);
  }
  friend void swap(distributed_mdarray& a, distributed_mdarray& b) noexcept { a.swap(b); }

  // ---- shape ------------------------------------------------------------------------------
  const index_type& extents() const noexcept { return layout_.extents(); }
  std::size_t size() const noexcept { return layout_.size(); }
  bool empty() const noexcept { return size() == 0; }
  const device_group& group() const noexcept { return group_; }
  /// The grid and the tiles' places (pure host arithmetic).
  const md_decomposition<Rank>& layout() const noexcept { return layout_; }
  /// The options with the grid actually used.
  const options_type& options() const noexcept { return options_; }
  const index_type& halo_widths() const noexcept { return options_.halo; }
  std::size_t tile_count() const noexcept { return tiles_.size(); }

  /// Slot s's tile (see md_tile).
  tile_type tile(std::size_t slot) const {
    MULTIGPU_EXPECTS_AS(slot < tiles_.size(), std::out_of_range,
                        detail::concat("distributed_mdarray: slot ", slot, " of ", tiles_.size()));
    tile_type t;
    t.slot = slot;
    t.device = group_.device(slot);
    t.stream = group_.stream(slot);
    t.offset = layout_.tile_offset(slot);
    t.halo = options_.halo;
    const index_type interior = layout_.tile_extents(slot);
    const index_type padded = padded_extents(interior, options_.halo);
    T* base = tiles_[slot].data();
    const auto padded_strides = detail::row_major_strides(padded);
    t.with_halo = typename tile_type::padded_span(base, to_extents(padded));
    cuda::std::array<std::size_t, Rank> strides{};
    std::size_t first = 0;
    for (std::size_t d = 0; d < Rank; ++d) {
      // layout_stride needs positive strides, also for an empty tile.
      strides[d] = base != nullptr ? padded_strides[d] : 1;
      first += options_.halo[d] * padded_strides[d];
    }
    using interior_mapping = cuda::std::layout_stride::mapping<typename tile_type::extents_type>;
    t.interior = typename tile_type::interior_span(base != nullptr ? base + first : nullptr,
                                                   interior_mapping(to_extents(interior), strides));
    return t;
  }

  // ---- elements ----------------------------------------------------------------------------
  /// The element at global index i; waits for its slot's stream. std::out_of_range outside.
  T get(const index_type& i) const {
    T value{};
    transfer::read_elements(detail::resources_of(group_), std::array{place_of(i)}, sizeof(T), &value);
    return value;
  }
  /// Writes the element at global index i, in order on its slot's stream: returns once the
  /// copy is enqueued (with managed storage, once written). std::out_of_range outside.
  void set(const index_type& i, const T& value) {
    transfer::write_elements(detail::resources_of(group_), std::array{place_of(i)}, sizeof(T), &value);
  }

  // ---- host transfers ------------------------------------------------------------------------
  /// Overwrites the interior with a host array in row-major order (host.size() == size(),
  /// std::invalid_argument otherwise): one 3-D copy per tile (per outer index beyond three
  /// dimensions). Waits for the copies.
  void copy_from_host(std::span<const T> host) {
    expect_host_size(host.size());
    transfer_host(const_cast<T*>(host.data()), true);
  }
  /// The interior into a host array in row-major order (host.size() == size()). Waits.
  void copy_to_host(std::span<T> host) const {
    expect_host_size(host.size());
    const_cast<distributed_mdarray*>(this)->transfer_host(host.data(), false);
  }
  std::vector<T> to_host() const {
    std::vector<T> host(size());
    copy_to_host(host);
    return host;
  }

  /// The exchange machinery (mdarray/detail/halo_engine.hpp), built on first use. Internal:
  /// exchange_halos and stencil_transform use it.
  detail::md_halo_engine<T, Rank>& halo_engine() const {
    if (!halos_) {
      std::array<boundary_kind, Rank> kinds{};
      std::array<T, Rank> values{};
      for (std::size_t d = 0; d < Rank; ++d) {
        kinds[d] = options_.boundaries[d].kind;
        values[d] = options_.boundaries[d].value;
      }
      std::vector<T*> bases(tiles_.size());
      for (std::size_t s = 0; s < tiles_.size(); ++s) bases[s] = tiles_[s].data();
      halos_ = std::make_unique<detail::md_halo_engine<T, Rank>>(group_, layout_, options_.halo, kinds, values, bases);
    }
    return *halos_;
  }

 private:
  static typename tile_type::extents_type to_extents(const index_type& e) {
    cuda::std::array<std::size_t, Rank> a{};
    for (std::size_t d = 0; d < Rank; ++d) a[d] = e[d];
    return typename tile_type::extents_type(a);
  }

  void setup(const index_type& extents) {
    const std::size_t slots = group_.size();
    bool chosen = true;
    for (std::size_t g : options_.grid) chosen = chosen && g == 0;
    if (chosen) options_.grid = md_decomposition<Rank>::choose_grid(extents, slots, options_.halo);
    std::size_t places = 1;
    for (std::size_t g : options_.grid) places *= g;
    MULTIGPU_EXPECTS(places == slots,
                     detail::concat("distributed_mdarray: the grid (", detail::format_index(options_.grid, " x "),
                                    ") has ", places, " places but the group has ", slots, " slots"));
    layout_ = md_decomposition<Rank>(extents, options_.grid);
    std::array<boundary_kind, Rank> kinds{};
    for (std::size_t d = 0; d < Rank; ++d) kinds[d] = options_.boundaries[d].kind;
    check_halo_fits(layout_, options_.halo, kinds);  // std::length_error naming the tile, before allocating
    std::vector<device_buffer<T>> buffers;
    buffers.reserve(slots);
    for (std::size_t s = 0; s < slots; ++s) {
      const std::size_t count = detail::product(padded_extents(layout_.tile_extents(s), options_.halo));
      buffers.emplace_back(count, group_.segment_resource(s), group_.device(s), group_.stream(s));
    }
    tiles_ = std::move(buffers);
  }

  void fill_storage(const T& value) {
    for (std::size_t s = 0; s < tiles_.size(); ++s) {
      if (tiles_[s].size() == 0) continue;
      device_guard guard(group_.device(s));
      detail::fill_bytes(tiles_[s].data(), tiles_[s].size(), &value, sizeof(T), group_.stream(s));
    }
  }

  void expect_host_size(std::size_t n) const {
    MULTIGPU_EXPECTS(n == size(), detail::concat("distributed_mdarray: a host array of ", n,
                                                 " elements for an array of extents (",
                                                 detail::format_index(extents(), " x "), ") = ", size(), " elements"));
  }

  /// Where the element at global index i lives (std::out_of_range outside).
  transfer::element_place place_of(const index_type& i) const {
    const auto [slot, local] = layout_.locate(i);
    return {group_.device(slot), group_.stream(slot), element_address(slot, local),
            group_.options().storage == storage::managed};
  }
  T* element_address(std::size_t slot, const index_type& local) const {
    const index_type padded = padded_extents(layout_.tile_extents(slot), options_.halo);
    const auto strides = detail::row_major_strides(padded);
    std::size_t o = 0;
    for (std::size_t d = 0; d < Rank; ++d) o += (local[d] + options_.halo[d]) * strides[d];
    return tiles_[slot].data() + o;
  }

  /// One cudaMemcpy3DAsync per tile over the last three dimensions (fewer dimensions are
  /// padded with ones in front), looping over any dimensions before them.
  void transfer_host(T* host, bool to_device) {
    constexpr std::size_t inner = Rank < 3 ? Rank : 3;
    const auto host_extent = [&](std::size_t k) {  // k-th of the three inner dimensions
      return k + inner < 3 ? std::size_t{1} : extents()[Rank - 3 + k];
    };
    for (std::size_t s = 0; s < tiles_.size(); ++s) {
      const index_type e = layout_.tile_extents(s);
      if (detail::product(e) == 0) continue;
      const index_type o = layout_.tile_offset(s);
      const index_type padded = padded_extents(e, options_.halo);
      const auto pick = [&](const index_type& v, std::size_t k, std::size_t fallback) {
        return k + inner < 3 ? fallback : v[Rank - 3 + k];
      };
      device_guard guard(group_.device(s));
      const std::size_t outer_count = [&] {
        std::size_t n = 1;
        for (std::size_t d = 0; d + inner < Rank; ++d) n *= e[d];
        return n;
      }();
      const auto host_strides = detail::row_major_strides(extents());
      const auto tile_strides = detail::row_major_strides(padded);
      for (std::size_t outer = 0; outer < outer_count; ++outer) {
        // The host and tile offsets of this outer index (dimensions before the inner three).
        std::size_t host_base = 0;
        std::size_t tile_base = 0;
        std::size_t rest = outer;
        for (std::size_t d = Rank - inner; d-- > 0;) {
          const std::size_t c = rest % e[d];
          rest /= e[d];
          host_base += (o[d] + c) * host_strides[d];
          tile_base += (options_.halo[d] + c) * tile_strides[d];
        }
        cudaMemcpy3DParms p{};
        cudaPitchedPtr host_ptr = make_cudaPitchedPtr(host + host_base, host_extent(2) * sizeof(T), host_extent(2),
                                                      host_extent(1));
        cudaPitchedPtr tile_ptr = make_cudaPitchedPtr(tiles_[s].data() + tile_base, pick(padded, 2, 1) * sizeof(T),
                                                      pick(padded, 2, 1), pick(padded, 1, 1));
        const cudaPos host_pos = make_cudaPos(pick(o, 2, 0) * sizeof(T), pick(o, 1, 0), pick(o, 0, 0));
        const cudaPos tile_pos = make_cudaPos(pick(options_.halo, 2, 0) * sizeof(T), pick(options_.halo, 1, 0),
                                              pick(options_.halo, 0, 0));
        p.extent = make_cudaExtent(pick(e, 2, 1) * sizeof(T), pick(e, 1, 1), pick(e, 0, 1));
        if (to_device) {
          p.srcPtr = host_ptr;
          p.srcPos = host_pos;
          p.dstPtr = tile_ptr;
          p.dstPos = tile_pos;
          p.kind = cudaMemcpyHostToDevice;
        } else {
          p.srcPtr = tile_ptr;
          p.srcPos = tile_pos;
          p.dstPtr = host_ptr;
          p.dstPos = host_pos;
          p.kind = cudaMemcpyDeviceToHost;
        }
        MULTIGPU_CUDA_TRY(cudaMemcpy3DAsync(&p, group_.stream(s)));
      }
    }
    for (std::size_t s = 0; s < tiles_.size(); ++s) {
      if (tiles_[s].size() == 0) continue;
      device_guard guard(group_.device(s));
      MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group_.stream(s)));
    }
  }

  device_group group_;
  options_type options_;
  md_decomposition<Rank> layout_;
  std::vector<device_buffer<T>> tiles_;
  // After the tiles: released first, so that its halo streams are joined into the slot
  // streams before the tiles are freed on them.
  mutable std::unique_ptr<detail::md_halo_engine<T, Rank>> halos_;
};

}  // namespace multigpu
