#pragma once
// A vector whose elements are sharded over the slots of a device_group: one contiguous
// segment per slot, each allocated on the slot's stream from its device's pool (or from the
// slot's resource in group_options::resources, or as managed memory with storage::managed). Every
// operation on a segment is enqueued on that stream, so consecutive operations need no
// host synchronisation; calls that hand data to the host wait for exactly what they need.
//
// Threads: as for standard containers, calls that only read a vector (const members,
// to_vector, algorithms taking it as an input) may run concurrently from several host
// threads; a call that writes a vector needs external synchronisation against every other
// call on that vector. Different vectors may be used from any threads at once, on the same
// group or not (tests/gpu/concurrency_test.cu).

#include <multigpu/container/detail/fill_bytes.hpp>
#include <multigpu/container/distribution.hpp>
#include <multigpu/container/iterator.hpp>
#include <multigpu/container/segment_view.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/diagnostics.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/transfer/copy_plan.hpp>
#include <multigpu/transfer/device_copy.hpp>
#include <multigpu/transfer/element_copy.hpp>
#include <multigpu/transfer/host_transfer.hpp>

#include <algorithm>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <memory>
#include <span>
#include <ranges>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {

template <class T>
class distributed_vector;

namespace detail {
template <class T>
void keep_segment_prefixes(distributed_vector<T>& v, std::span<const std::size_t> sizes);

/// The container's bulk moves, for the library's algorithms, team calls and tests: not part of
/// the user's interface (users call copy, to_vector and the vector's constructors).
struct vector_access {
  /// Copies `count` host elements into [first, first + count) of v.
  template <class T>
  static void upload(distributed_vector<T>& v, std::size_t first, const std::type_identity_t<T>* host,
                     std::size_t count) {
    v.upload(first, host, count);
  }
  /// Copies [first, first + count) of v to host memory.
  template <class T>
  static void download(const distributed_vector<T>& v, std::size_t first, std::type_identity_t<T>* host,
                       std::size_t count) {
    v.download(first, host, count);
  }
  /// Copies [src_first, src_first + count) of `from` (any group, any layout) to [dst_first, ...)
  /// of `to`, over peers or through the host; overlapping ranges of one vector copy as memmove.
  template <class T>
  static void copy_range_from(distributed_vector<T>& to, const distributed_vector<T>& from, std::size_t src_first,
                              std::size_t count, std::size_t dst_first) {
    to.copy_range_from(from, src_first, count, dst_first);
  }
};
}

/// Overlap between neighbouring segments: each segment's storage also holds `width` copies
/// of its neighbours' boundary elements on each side (see exchange_halos). `periodic` makes
/// the first and last segments neighbours. A halo changes no size, index or algorithm.
struct halo {
  std::size_t width = 0;
  bool periodic = false;
  friend bool operator==(const halo&, const halo&) = default;
};

template <class T>
class distributed_vector {
  static_assert(std::is_trivially_copyable_v<T>,
                "multigpu::distributed_vector<T> needs a trivially copyable T: elements move "
                "between host and devices as raw bytes");
  static_assert(!std::is_const_v<T> && !std::is_volatile_v<T> && !std::is_reference_v<T>,
                "multigpu::distributed_vector<T> needs an unqualified object type T");

 public:
  using value_type = T;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = device_reference<T>;
  using const_reference = T;
  using iterator = segmented_iterator<T, false>;
  using const_iterator = segmented_iterator<T, true>;

  /// Empty, on the default group.
  distributed_vector() : distributed_vector(0, default_group()) {}

  /// n value-initialised elements.
  explicit distributed_vector(size_type n, device_group group = default_group())
    requires std::default_initializable<T>
      : group_(std::move(group)) {
    allocate(distribution::block(n, group_.size()));
    fill_value(0, n, T{});
  }

  /// n value-initialised elements, each segment with a halo of `overlap.width` elements on
  /// each side.
  distributed_vector(size_type n, multigpu::halo overlap, device_group group = default_group())
    requires std::default_initializable<T>
      : group_(std::move(group)), halo_(overlap) {
    allocate(distribution::block(n, group_.size()));
    fill_value(0, n, T{});
  }

  /// n copies of value.
  distributed_vector(size_type n, const T& value, device_group group = default_group())
      : group_(std::move(group)) {
    allocate(distribution::block(n, group_.size()));
    fill_value(0, n, value);
  }

  distributed_vector(std::initializer_list<T> values, device_group group = default_group())
      : group_(std::move(group)) {
    allocate(distribution::block(values.size(), group_.size()));
    upload(0, values.begin(), values.size());
  }

  /// From any host input range whose elements convert to T. Contiguous ranges of T are
  /// copied straight from their memory (pinned memory by DMA, pageable memory through the
  /// pinned staging workers); other ranges are gathered on the host first.
  template <std::ranges::input_range R>
    requires(!std::same_as<std::remove_cvref_t<R>, distributed_vector> &&
             std::convertible_to<std::ranges::range_reference_t<R>, T>)
  explicit distributed_vector(R&& host, device_group group = default_group())
      : group_(std::move(group)) {
    if constexpr (std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
                  std::same_as<std::ranges::range_value_t<R>, T>) {
      allocate(distribution::block(std::ranges::size(host), group_.size()));
      upload(0, std::ranges::data(host), std::ranges::size(host));
    } else {
      std::vector<T> staged;
      if constexpr (std::ranges::sized_range<R>) staged.reserve(std::ranges::size(host));
      for (auto&& x : host) staged.push_back(static_cast<T>(x));
      allocate(distribution::block(staged.size(), group_.size()));
      upload(0, staged.data(), staged.size());
    }
  }

  /// From a host iterator range, as std::vector(first, last).
  template <std::input_iterator It, std::sentinel_for<It> S>
    requires std::convertible_to<std::iter_reference_t<It>, T>
  distributed_vector(It first, S last, device_group group = default_group())
      : distributed_vector(std::ranges::subrange(first, last), std::move(group)) {}

  /// Deep copy on the same group (and halo), segment by segment on each slot's stream.
  distributed_vector(const distributed_vector& other) : group_(other.group_), halo_(other.halo_) {
    allocate(other.layout_);
    copy_segments_from(other);
  }

  /// Leaves `other` empty and usable, on the same group.
  distributed_vector(distributed_vector&& other) noexcept
      : group_(other.group_),
        halo_(other.halo_),
        layout_(std::exchange(other.layout_, distribution())),
        segments_(std::exchange(other.segments_, {})) {}

  distributed_vector& operator=(const distributed_vector& other) {
    if (this == &other) return *this;
    if (group_ == other.group_ && layout_ == other.layout_ && halo_ == other.halo_ && !segments_.empty()) {
      copy_segments_from(other);  // same shape: reuse the storage
    } else {
      distributed_vector copy(other);
      swap(copy);
    }
    return *this;
  }

  distributed_vector& operator=(distributed_vector&& other) noexcept {
    if (this != &other) {
      distributed_vector moved(std::move(other));
      swap(moved);
    }
    return *this;
  }

  void swap(distributed_vector& other) noexcept {
    std::swap(group_, other.group_);
    std::swap(halo_, other.halo_);
    std::swap(layout_, other.layout_);
    std::swap(segments_, other.segments_);
  }
  friend void swap(distributed_vector& a, distributed_vector& b) noexcept { a.swap(b); }

  // ---- size and layout --------------------------------------------------------------
  size_type size() const noexcept { return layout_.size(); }
  bool empty() const noexcept { return size() == 0; }
  const device_group& group() const noexcept { return group_; }
  /// Where each segment starts and ends in the global index space.
  const distribution& layout() const noexcept { return layout_; }
  /// The halo every segment carries (width 0: none).
  multigpu::halo halo() const noexcept { return halo_; }
  std::size_t segment_count() const { return group_.size(); }
  /// The elements the segments' storage holds, halos not counted: size() for every vector
  /// except the result of a size-changing algorithm's layout-keeping form, which keeps the
  /// storage it selected into (as std::vector keeps its capacity). shrink_to_fit() trims it.
  size_type capacity() const noexcept {
    size_type total = 0;
    for (const device_buffer<T>& b : segments_) total += b.size() > 2 * halo_.width ? b.size() - 2 * halo_.width : 0;
    return total;
  }
  /// Gives back the storage beyond size(): every segment is reallocated to its size and its
  /// elements copied there, on its own stream (std::vector's request, always honoured here).
  /// Does nothing when capacity() == size(). Enqueues only.
  void shrink_to_fit() {
    if (capacity() == size()) return;
    distributed_vector exact(group_, layout_, halo_);
    exact.copy_segments_from(*this);
    swap(exact);
  }

  segment_view<T> segment(std::size_t slot) {
    check_slot(slot);
    return make_view<T>(slot);
  }
  segment_view<const T> segment(std::size_t slot) const {
    check_slot(slot);
    return make_view<const T>(slot);
  }
  /// A random-access, sized view of every slot's segment_view, in slot order; it refers to
  /// this vector (as std::views over a container do), so it must not outlive it.
  auto segments() {
    return std::views::iota(std::size_t{0}, segment_count()) |
           std::views::transform([this](std::size_t slot) { return make_view<T>(slot); });
  }
  auto segments() const {
    return std::views::iota(std::size_t{0}, segment_count()) |
           std::views::transform([this](std::size_t slot) { return make_view<const T>(slot); });
  }

  // ---- iteration and element access --------------------------------------------------
  iterator begin() noexcept { return {this, 0}; }
  iterator end() noexcept { return {this, static_cast<difference_type>(size())}; }
  const_iterator begin() const noexcept { return {this, 0}; }
  const_iterator end() const noexcept { return {this, static_cast<difference_type>(size())}; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }

  reference operator[](size_type i) { return reference(*this, i); }
  T operator[](size_type i) const { return read(i); }
  /// std::out_of_range past the end.
  T at(size_type i) const {
    MULTIGPU_EXPECTS_AS(i < size(), std::out_of_range,
                        detail::concat("distributed_vector::at: index ", i,
                                       " is out of range for a vector of size ", size()));
    return read(i);
  }

  /// Reads element i: a small device-to-host copy after the work already enqueued on its
  /// segment's stream (read of one index).
  T read(size_type i) const {
    T value;
    transfer::read_elements(detail::resources_of(group_), std::array{place_of(i)}, sizeof(T), &value);
    return value;
  }
  /// Writes element i, ordered with the work on its segment's stream (write of one index):
  /// returns once the copy is enqueued.
  void write(size_type i, const T& value) {
    transfer::write_elements(detail::resources_of(group_), std::array{place_of(i)}, sizeof(T), &value);
  }

  /// Reads elements indices[j], each after the work already enqueued on its segment's stream:
  /// one small copy each into one pinned staging block, then one wait for them all (what a
  /// single read costs, however many there are). std::out_of_range for an index past the end,
  /// before anything is read.
  std::vector<T> read(std::span<const size_type> indices) const {
    std::vector<T> values(indices.size());
    const std::vector<transfer::element_place> places = places_of(indices);
    transfer::read_elements(detail::resources_of(group_), places, sizeof(T), values.data());
    return values;
  }
  /// Writes values[j] to element indices[j], each ordered after the work already enqueued on
  /// its segment's stream. The values are copied to one pinned staging block first, and the call
  /// returns once the copies are enqueued (with managed storage, once written).
  /// std::invalid_argument when the spans differ in length and std::out_of_range for an index
  /// past the end, with nothing written.
  void write(std::span<const size_type> indices, std::span<const T> values) {
    MULTIGPU_EXPECTS(indices.size() == values.size(),
                     detail::concat("distributed_vector::write: ", indices.size(), " indices but ", values.size(),
                                    " values"));
    const std::vector<transfer::element_place> places = places_of(indices);
    transfer::write_elements(detail::resources_of(group_), places, sizeof(T), values.data());
  }

  /// Keeps the first min(n, size()) elements; new elements are value-initialised. The
  /// layout is rebalanced over the slots (distribution::block) and the kept elements move
  /// where they now belong: resize(size()) evens out the segments a filter left uneven, and
  /// does nothing to a vector already in blocks.
  void resize(size_type n)
    requires std::default_initializable<T>
  {
    const size_type kept = std::min(n, size());
    relayout(n);
    fill_value(kept, n, T{});
  }

  /// An uninitialised vector with the given layout over `group` (whose size must match the
  /// layout's segment count). Algorithms use it for temporaries that line up with another
  /// range.
  distributed_vector(device_group group, const distribution& layout, multigpu::halo overlap = {})
      : group_(std::move(group)), halo_(overlap) {
    MULTIGPU_EXPECTS(layout.segment_count() == group_.size(),
                     detail::concat("distributed_vector: a layout of ", layout.segment_count(),
                                    " segments does not fit a group of ", group_.size(), " slots"));
    allocate(layout);
  }

 private:
  friend struct detail::vector_access;

  // ---- Bulk moves: what copy(), to_vector() and the algorithms are made of (through
  // detail::vector_access); not part of the user's interface. ----
  /// Copies `count` host elements into [first, first + count).
  void upload(size_type first, const T* host, size_type count) {
    auto pieces = device_pieces(first, first + count);
    transfer::copy_host_to_devices(detail::resources_of(group_), host, pieces);
  }
  /// Copies [first, first + count) to host memory.
  void download(size_type first, T* host, size_type count) const {
    auto pieces = device_pieces(first, first + count);
    transfer::copy_devices_to_host(detail::resources_of(group_), host, pieces);
  }

  /// Copies elements [src_first, src_first + count) of `source` (any group, any layout) to
  /// [dst_first, dst_first + count) of this vector, over peers or through the host. The
  /// two ranges may overlap when `source` is this vector: the result is as memmove's.
  void copy_range_from(const distributed_vector& source, size_type src_first, size_type count,
                       size_type dst_first) {
    // Both ranges are checked first (split throws std::invalid_argument naming a range that
    // does not fit), so that neither a self-copy in place nor the overlap's temporary skips it.
    auto from = source.layout_.split(src_first, src_first + count);
    auto to = layout_.split(dst_first, dst_first + count);
    if (&source == this && count > 0) {
      if (src_first == dst_first) return;
      const size_type gap = src_first < dst_first ? dst_first - src_first : src_first - dst_first;
      if (gap < count) {
        // The moves between slot pairs run in no particular order, so one of them could
        // overwrite elements that another still has to read: read them all out first.
        diagnostics::note(diagnostics::path::overlap_staged_copy);
        distributed_vector staged(group_, distribution::block(count, group_.size()));
        staged.copy_range_from(*this, src_first, count, 0);
        copy_range_from(staged, 0, count, dst_first);
        return;
      }
    }
    std::vector<transfer::byte_move> moves;
    for (const transfer::move& m : transfer::plan_moves(from, to))
      moves.push_back({m.src_slot, source.base(m.src_slot) + m.src_offset, m.dst_slot,
                       base(m.dst_slot) + m.dst_offset, m.count * sizeof(T)});
    transfer::copy_between(detail::resources_of(source.group_), detail::resources_of(group_), moves);
  }

  /// Fills [first, last) with value on each segment's stream.
  void fill_value(size_type first, size_type last, const T& value) {
    for (const piece& p : layout_.split(first, last)) {
      device_guard guard(group_.device(p.slot));
      detail::fill_bytes(base(p.slot) + p.local_offset, p.count, &value, sizeof(T),
                         group_.stream(p.slot));
    }
  }

  void check_slot(std::size_t slot) const {
    MULTIGPU_EXPECTS_AS(slot < segment_count(), std::out_of_range,
                        detail::concat("distributed_vector::segment: slot ", slot,
                                       " is out of range for ", segment_count(), " segments"));
  }

  template <class U>
  segment_view<U> make_view(std::size_t slot) const {
    bool present = slot < layout_.segment_count();
    const bool has_halo = present && layout_.segment_size(slot) > 0;
    return segment_view<U>(slot, group_.device(slot), group_.stream(slot), present ? base(slot) : nullptr,
                           present ? layout_.segment_size(slot) : 0, present ? layout_.segment_offset(slot) : size(),
                           has_halo ? halo_.width : 0);
  }

  /// First own element of a segment (its storage starts `halo_.width` elements earlier).
  T* base(std::size_t slot) const noexcept {
    T* storage = segments_[slot].data();
    return storage ? storage + halo_.width : nullptr;
  }

  void allocate(const distribution& layout) {
    // A halo so wide that a segment's storage (own + 2 * width elements) overflows the size
    // type is rejected before anything is allocated.
    const std::size_t max_elements = std::numeric_limits<std::size_t>::max() / sizeof(T);
    for (std::size_t s = 0; s < layout.segment_count(); ++s) {
      const std::size_t own = layout.segment_size(s);
      // Without a halo an oversized segment is the size check's business (std::invalid_argument
      // naming the size, from device_buffer, as for any vector).
      if (halo_.width == 0) continue;
      MULTIGPU_EXPECTS_AS(own == 0 || (own <= max_elements && halo_.width <= (max_elements - own) / 2),
                          std::length_error,
                          detail::concat("distributed_vector: a halo of width ", halo_.width, " around segment ", s,
                                         " of ", own, " elements needs more than ", max_elements, " elements of ",
                                         sizeof(T), " bytes"));
    }
    std::vector<device_buffer<T>> buffers;
    buffers.reserve(layout.segment_count());
    // On failure the buffers already made are released on their streams by ~vector.
    for (std::size_t s = 0; s < layout.segment_count(); ++s) {
      const std::size_t own = layout.segment_size(s);
      const std::size_t count = own > 0 ? own + 2 * halo_.width : 0;
      buffers.emplace_back(count, group_.segment_resource(s), group_.device(s), group_.stream(s));
      if (own > 0 && halo_.width > 0) {
        // Halos hold zero bytes until exchange_halos fills them.
        device_guard guard(group_.device(s));
        MULTIGPU_CUDA_TRY(cudaMemsetAsync(buffers.back().data(), 0, buffers.back().size_bytes(), group_.stream(s)));
      }
    }
    segments_ = std::move(buffers);
    layout_ = layout;
  }

  /// Where element i lives (std::out_of_range past the end).
  transfer::element_place place_of(size_type i) const {
    const auto [slot, local] = layout_.locate(i);
    return {group_.device(slot), group_.stream(slot), base(slot) + local,
            group_.options().storage == storage::managed};
  }
  /// Where each of `indices` lives (std::out_of_range for one past the end, before anything moves).
  std::vector<transfer::element_place> places_of(std::span<const size_type> indices) const {
    std::vector<transfer::element_place> places;
    places.reserve(indices.size());
    for (size_type i : indices) places.push_back(place_of(i));
    return places;
  }

  /// resize and rebalance: n elements in even blocks over the group (distribution::block), the
  /// first min(n, size()) of them moved from where they were, the rest not yet written.
  /// Nothing moves when the vector is already so.
  void relayout(size_type n) {
    const distribution even = distribution::block(n, group_.size());
    if (n == size() && !segments_.empty() && layout_ == even) return;
    distributed_vector moved(group_, even, halo_);
    moved.copy_range_from(*this, 0, std::min(n, size()), 0);
    swap(moved);
  }
  template <class U>
  friend void rebalance(distributed_vector<U>& v);

  void copy_segments_from(const distributed_vector& other) {
    copy_range_from(other, 0, other.size(), 0);
  }

  std::vector<transfer::device_piece> device_pieces(size_type first, size_type last) const {
    std::vector<transfer::device_piece> pieces;
    for (const piece& p : layout_.split(first, last))
      pieces.push_back({group_.device(p.slot), group_.stream(p.slot), base(p.slot) + p.local_offset,
                        p.count * sizeof(T)});
    return pieces;
  }

  friend void detail::keep_segment_prefixes<T>(distributed_vector& v, std::span<const std::size_t> sizes);

  device_group group_;
  multigpu::halo halo_{};
  distribution layout_;
  std::vector<device_buffer<T>> segments_;
};

namespace detail {
/// Makes `v` the first sizes[s] elements of each of its segments, in place: the layout becomes
/// distribution::from_sizes(sizes) and each segment keeps its storage (a size-changing
/// algorithm's result, selected into a vector as large as its input). `v` has no halo and
/// sizes[s] is at most segment s's size.
template <class T>
void keep_segment_prefixes(distributed_vector<T>& v, std::span<const std::size_t> sizes) {
  MULTIGPU_EXPECTS(v.halo_.width == 0 && sizes.size() == v.segment_count(),
                   "keep_segment_prefixes: a vector without a halo and one size per segment (internal)");
  for (std::size_t s = 0; s < sizes.size(); ++s) {
    MULTIGPU_EXPECTS(sizes[s] <= v.layout_.segment_size(s),
                     concat("keep_segment_prefixes: segment ", s, " has ", v.layout_.segment_size(s),
                            " elements, fewer than ", sizes[s], " (internal)"));
    if (sizes[s] == 0) v.segments_[s].release();  // an empty segment holds nothing
  }
  v.layout_ = distribution::from_sizes(sizes);
}
}  // namespace detail

/// Moves v's elements to even blocks over its group (distribution::block), as a new vector of
/// the same size would have them: after filters that leave most of the data on a few devices.
/// Indices and values do not change. Does nothing when v is already even. As v.resize(v.size()),
/// for any element type.
template <class T>
void rebalance(distributed_vector<T>& v) {
  v.relayout(v.size());
}

/// Gathers the whole vector to host memory.
template <class T>
std::vector<T> to_vector(const distributed_vector<T>& v) {
  std::vector<T> host;
  host.reserve(v.size());
  // A large new vector's pages are mapped on several threads before value-initialisation
  // writes them: on one thread, first-touch faults cost more than the copy itself.
  transfer::prefault_host(host.data(), v.size() * sizeof(T));
  host.resize(v.size());
  detail::vector_access::download(v, 0, host.data(), host.size());
  return host;
}

}  // namespace multigpu
