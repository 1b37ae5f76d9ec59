#pragma once
// Size-changing algorithms: copy_if, remove_copy_if, remove_if, unique, unique_copy, the
// partitions (stable_partition, partition, partition_copy), and rebalance.
//
// Two forms:
// - The layout-keeping form, copy_if(v, pred) -> distributed_vector: each slot keeps its own
//   survivors, in order, on its own device; no element crosses a device. The result's layout
//   is distribution::from_sizes(survivors per slot). One CUB select per segment
//   (cub::DeviceSelect::If, what thrust::copy_if uses) straight into the result's storage, and
//   one count per slot read back to size it: the call waits for the devices. The result keeps
//   that storage: each slot with survivors keeps its input piece's (capacity() is at most the
//   input's size); shrink_to_fit() gives the rest back.
// - The STL form, copy_if(first, last, out, pred) -> the output's new end: the survivors
//   written densely in global order from `out`. The same selection, then each survivor moves to
//   its global position (locally when it stays on its slot, over peer links or host staging
//   when it does not: a copy between layouts). Also waits for the devices, those copies
//   included: the output is complete when the call returns.
// Both read every input element before writing any output, so the output may overlap the input.
// unique compares neighbours, eq(x[i - 1], x[i]), within a slot and across slot boundaries
// alike, as CUB and Thrust do (std::unique compares with the element it kept last, which
// differs only for a predicate that is not an equivalence): the slot count never changes the
// result. Every form also takes a view of part of a vector in place of [first, last).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/core/nvtx.hpp>

#include <cub/device/device_select.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <concepts>
#include <cstdint>
#include <ranges>
#include <span>
#include <utility>
#include <vector>

namespace multigpu {

namespace detail {

/// !pred(x), device-callable.
template <class Pred>
struct negated {
  Pred pred;
  template <class X>
  __host__ __device__ bool operator()(const X& x) const {
    return !static_cast<bool>(pred(x));
  }
};

/// The selection itself: `select(temp, bytes, in, out, n_selected, n, piece_index, stream)`
/// runs one CUB selection (named `Select::name`) on a piece, whose survivors go to `destination(i)` (a
/// device pointer on the piece's device, with room for the piece). Returns the survivors per
/// piece. Waits for the devices.
template <class T, class Select, class Destination>
std::vector<std::size_t> select_pieces_to(const range_ref<T>& range, Select select, Destination destination) {
  return counted_pieces<std::int64_t>(range, [&](const piece_context& ctx, std::int64_t* n_selected) {
    const T* in = range.data(ctx.index);
    T* out = destination(ctx.index);
    cub_call(*ctx.scratch, ctx.stream, Select::name, ctx.count, [&](void* temp, std::size_t& bytes) {
      return with_count(ctx.count, [&](auto n) {
        return select(temp, bytes, in, out, n_selected, n, ctx.index, ctx.stream);
      });
    });
  });
}

/// The survivors of `range`, in a new vector on the range's group: slot s holds the survivors
/// of the range's piece on slot s, in order (the layout-keeping form). Waits for the devices:
/// the counts size the result.
template <class T, class Select>
distributed_vector<T> select_pieces_with(const range_ref<T>& range, Select select) {
  // Selected into a vector as large as the input's pieces, then trimmed to the survivors.
  distributed_vector<T> kept(range.group(), layout_like(range));
  const std::vector<std::size_t> survivors =
      select_pieces_to(range, select, [&](std::size_t i) { return kept.segment(range.pieces[i].slot).data(); });
  std::vector<std::size_t> counts(range.group().size(), 0);
  for (std::size_t i = 0; i < survivors.size(); ++i) counts[range.pieces[i].slot] = survivors[i];
  keep_segment_prefixes(kept, counts);
  return kept;
}

/// Where a one-piece selection may write straight into the output: the output's next `count`
/// elements in one segment of the input's group, on the input piece's slot, not overlapping
/// the input. nullptr otherwise (the selection goes through a temporary).
template <class T, class U>
U* direct_output(const range_ref<T>& range, segmented_iterator<U, false> out) {
  const distributed_vector<U>& target = *out.container();
  if constexpr (!std::is_same_v<T, U>) {
    return nullptr;
  } else {
    if (range.pieces.size() != 1 || !(target.group() == range.group()) || target.halo().width != 0 ||
        out.index() + range.count > target.size())
      return nullptr;
    if (&target == range.vector && out.index() < range.first + range.count && range.first < out.index() + range.count)
      return nullptr;
    const range_ref<U> to(target, out.index(), range.count);
    if (to.pieces.size() != 1 || to.pieces[0].slot != range.pieces[0].slot) return nullptr;
    return to.data(0);
  }
}

/// A piece selection by `pred` (cub::DeviceSelect::If, as thrust::copy_if).
template <class Pred>
struct if_selection {
  static constexpr const char* name = "cub::DeviceSelect::If";
  Pred pred;
  template <class T, class N>
  cudaError_t operator()(void* temp, std::size_t& bytes, const T* in, T* out, std::int64_t* n_selected, N n,
                         std::size_t, cudaStream_t stream) const {
    return cub::DeviceSelect::If(temp, bytes, in, out, n_selected, n, pred, stream);
  }
};

/// The survivors of `range` under `pred`, kept per slot.
template <class T, class Pred>
distributed_vector<T> select_pieces(const range_ref<T>& range, Pred pred) {
  return select_pieces_with(range, if_selection<Pred>{pred});
}

/// Whether element i of a piece starts a run of elements equal by `eq`, comparing neighbours
/// as CUB does: the first element of a piece compares with the element before the piece
/// (`before`, when there is one), so that slot boundaries change nothing.
template <class T, class Eq>
struct starts_run {
  const T* in;
  T before;
  bool has_before;
  Eq eq;
  __host__ __device__ bool operator()(std::size_t i) const {
    if (i == 0) return !has_before || !static_cast<bool>(eq(before, in[0]));
    return !static_cast<bool>(eq(in[i - 1], in[i]));
  }
};

/// A piece selection of the first element of every run of equal elements (by eq)
/// (cub::DeviceSelect::Flagged): each piece sees the element before it (those elements read
/// with one wait), so that a run across slots keeps only its first element.
template <class T, class Eq>
struct unique_selection {
  static constexpr const char* name = "cub::DeviceSelect::Flagged";
  std::vector<T> before;  // per piece
  Eq eq;
  unique_selection(const range_ref<T>& range, Eq eq_) : before(range.pieces.size()), eq(eq_) {
    std::vector<std::size_t> last;  // of every piece but the last, read with one wait
    for (std::size_t i = 0, at = 0; i + 1 < range.pieces.size(); ++i) {
      at += range.pieces[i].count;
      last.push_back(at - 1);
    }
    const std::vector<T> values = range.read(std::span<const std::size_t>(last));
    for (std::size_t i = 0; i < values.size(); ++i) before[i + 1] = values[i];
  }
  template <class N>
  cudaError_t operator()(void* temp, std::size_t& bytes, const T* in, T* out, std::int64_t* n_selected, N n,
                         std::size_t i, cudaStream_t stream) const {
    auto flags = thrust::make_transform_iterator(thrust::counting_iterator<std::size_t>(0),
                                                 starts_run<T, Eq>{in, before[i], i > 0, eq});
    return cub::DeviceSelect::Flagged(temp, bytes, in, flags, out, n_selected, n, stream);
  }
};

/// The first element of every run of equal elements of `range`, kept per slot.
template <class T, class Eq>
distributed_vector<T> unique_pieces(const range_ref<T>& range, Eq eq) {
  return select_pieces_with(range, unique_selection<T, Eq>(range, eq));
}

/// The STL form's second half: the layout-keeping survivors `kept` (of `count` inputs) written
/// densely from `out`, waited for; returns the output's new end. std::invalid_argument, with
/// nothing written, when the output has no room for them.
template <class T, class U>
segmented_iterator<U, false> write_selected(const char* algorithm, const distributed_vector<T>& kept,
                                            std::size_t count, segmented_iterator<U, false> out) {
  distributed_vector<U>& target = *out.container();
  const std::size_t size = target.size();
  const std::size_t room = out.index() <= size ? size - out.index() : 0;
  MULTIGPU_EXPECTS(kept.size() <= room,
                   concat(algorithm, ": ", kept.size(), " of the ", count, " elements pass, but the output has room for ",
                          room, " from index ", out.index(), " (vector size ", size,
                          "): nothing was written; make room for them"));
  if (kept.empty()) return out;
  target.copy_range_from(kept, 0, kept.size(), out.index());
  wait_for_groups({&target.group()});
  return out + static_cast<std::ptrdiff_t>(kept.size());
}

/// The STL form's selection: straight into the output where direct_output allows it (a one-slot
/// call costs what one CUB select does, and its count read waits for it), otherwise into a
/// layout-keeping temporary that write_selected moves into place.
template <class T, class U, class Select>
segmented_iterator<U, false> select_with_into(const char* algorithm, const range_ref<T>& range, Select select,
                                              segmented_iterator<U, false> out) {
  if (U* direct = direct_output(range, out)) {
    // The output has room for every input element, so the survivors always fit.
    const std::vector<std::size_t> survivors = select_pieces_to(range, select, [&](std::size_t) { return direct; });
    return out + static_cast<std::ptrdiff_t>(survivors[0]);
  }
  return write_selected(algorithm, select_pieces_with(range, select), range.count, out);
}

/// The STL form: the elements of [first, last) that the selection `make(range)` keeps, written
/// densely from `out`; returns the output's new end. std::invalid_argument, with nothing
/// written, when the output has no room for them.
template <class In, class U, class MakeSelection>
segmented_iterator<U, false> select_range_into(const char* algorithm, In first, In last,
                                               segmented_iterator<U, false> out, MakeSelection make) {
  using T = typename In::value_type;
  auto [v, begin, count] = unpack_range(algorithm, first, last);
  MULTIGPU_EXPECTS(out.container() != nullptr || count == 0,
                   concat(algorithm, ": the output iterator does not belong to a vector (default-constructed?)"));
  if (count == 0) return out;
  range_ref<T> range(*v, begin, count);
  return select_with_into(algorithm, range, make(range), out);
}

/// The survivors of [first, last) under `pred`, as select_range_into.
template <class In, class U, class Pred>
segmented_iterator<U, false> select_into(const char* algorithm, In first, In last, segmented_iterator<U, false> out,
                                         Pred pred) {
  return select_range_into(algorithm, first, last, out, [&](const auto&) { return if_selection<Pred>{pred}; });
}

/// As select_into, keeping the first element of every run of equal elements.
template <class In, class U, class Eq>
segmented_iterator<U, false> unique_into(const char* algorithm, In first, In last, segmented_iterator<U, false> out,
                                         Eq eq) {
  using T = typename In::value_type;
  return select_range_into(algorithm, first, last, out,
                           [&](const range_ref<T>& range) { return unique_selection<T, Eq>(range, eq); });
}

}  // namespace detail

// ---- the layout-keeping form ------------------------------------------------------------

/// The elements of [first, last) for which pred is true, in a new vector on the same group:
/// each slot keeps its own, in order; the layout is distribution::from_sizes(survivors per
/// slot). Each slot with survivors keeps the storage it selected into, as large as its input
/// piece (capacity()); shrink_to_fit() gives back the rest. Waits for the devices.
template <segmented_iterator_type I, class Pred>
distributed_vector<typename I::value_type> copy_if(I first, I last, Pred pred) {
  detail::check_device_operator<Pred>();
  using T = typename I::value_type;
  const nvtx_range mark("copy_if", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("copy_if", first, last);
  if (v == nullptr) return distributed_vector<T>();
  detail::range_ref<T> range(*v, begin, count);
  return detail::select_pieces(range, pred);
}

template <class T, class Pred>
distributed_vector<T> copy_if(const distributed_vector<T>& v, Pred pred) {
  return multigpu::copy_if(v.begin(), v.end(), pred);
}

/// The elements of [first, last) for which pred is false, kept like copy_if's.
template <segmented_iterator_type I, class Pred>
distributed_vector<typename I::value_type> remove_copy_if(I first, I last, Pred pred) {
  detail::check_device_operator<Pred>();
  return multigpu::copy_if(first, last, detail::negated<Pred>{pred});
}

template <class T, class Pred>
distributed_vector<T> remove_copy_if(const distributed_vector<T>& v, Pred pred) {
  return multigpu::remove_copy_if(v.begin(), v.end(), pred);
}

// ---- the STL form -------------------------------------------------------------------------

/// Copies the elements of [first, last) for which pred is true to [out, end), in order, and
/// returns end, as std::copy_if. The output may be any vector, on any group; it needs room for
/// the survivors (std::invalid_argument otherwise, with nothing written). Waits for the devices.
template <segmented_iterator_type I, class U, class Pred>
segmented_iterator<U, false> copy_if(I first, I last, segmented_iterator<U, false> out, Pred pred) {
  detail::check_device_operator<Pred>();
  static_assert(std::is_same_v<typename I::value_type, U>, "multigpu::copy_if: the output's element type must be the input's");
  const nvtx_range mark("copy_if", static_cast<std::uint64_t>(last - first));
  return detail::select_into("copy_if", first, last, out, pred);
}

/// Copies the elements of [first, last) for which pred is false, as std::remove_copy_if.
template <segmented_iterator_type I, class U, class Pred>
segmented_iterator<U, false> remove_copy_if(I first, I last, segmented_iterator<U, false> out, Pred pred) {
  detail::check_device_operator<Pred>();
  static_assert(std::is_same_v<typename I::value_type, U>,
                "multigpu::remove_copy_if: the output's element type must be the input's");
  const nvtx_range mark("remove_copy_if", static_cast<std::uint64_t>(last - first));
  return detail::select_into("remove_copy_if", first, last, out, detail::negated<Pred>{pred});
}

/// Moves the elements of [first, last) for which pred is false to the front, in order, and
/// returns the new logical end, as std::remove_if; the elements from there to last are left
/// unspecified (v.resize(end - v.begin()) trims them). Waits for the devices.
template <class T, class Pred>
segmented_iterator<T, false> remove_if(segmented_iterator<T, false> first, segmented_iterator<T, false> last, Pred pred) {
  detail::check_device_operator<Pred>();
  const nvtx_range mark("remove_if", static_cast<std::uint64_t>(last - first));
  return detail::select_into("remove_if", first, last, first, detail::negated<Pred>{pred});
}

template <class T, class Pred>
segmented_iterator<T, false> remove_if(distributed_vector<T>& v, Pred pred) {
  return multigpu::remove_if(v.begin(), v.end(), pred);
}

// ---- unique -------------------------------------------------------------------------------

/// The first element of every run of consecutive equal elements of [first, last) (neighbours
/// compared by eq), in a new vector on the same group: each slot keeps its own (a run that
/// crosses slots is kept on the slot where it starts), as copy_if's layout-keeping form. Waits
/// for the devices.
template <segmented_iterator_type I, class Eq = cuda::std::equal_to<>>
  requires(!segmented_iterator_type<Eq>)  // (first, last, out) is the STL form below
distributed_vector<typename I::value_type> unique_copy(I first, I last, Eq eq = {}) {
  detail::check_device_operator<Eq>();
  using T = typename I::value_type;
  const nvtx_range mark("unique_copy", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("unique_copy", first, last);
  if (v == nullptr) return distributed_vector<T>();
  if (count == 0) return distributed_vector<T>(0, v->group());
  detail::range_ref<T> range(*v, begin, count);
  return detail::unique_pieces(range, eq);
}

template <class T, class Eq = cuda::std::equal_to<>>
  requires(!segmented_iterator_type<Eq>)
distributed_vector<T> unique_copy(const distributed_vector<T>& v, Eq eq = {}) {
  return multigpu::unique_copy(v.begin(), v.end(), eq);
}

/// Copies the first element of every run of consecutive equal elements (by eq) of
/// [first, last) to [out, end), in order, and returns end, as std::unique_copy. The output
/// needs room for them (std::invalid_argument otherwise, with nothing written). Waits for the
/// devices.
template <segmented_iterator_type I, class U, class Eq = cuda::std::equal_to<>>
segmented_iterator<U, false> unique_copy(I first, I last, segmented_iterator<U, false> out, Eq eq = {}) {
  detail::check_device_operator<Eq>();
  static_assert(std::is_same_v<typename I::value_type, U>,
                "multigpu::unique_copy: the output's element type must be the input's");
  const nvtx_range mark("unique_copy", static_cast<std::uint64_t>(last - first));
  return detail::unique_into("unique_copy", first, last, out, eq);
}

/// Keeps the first element of every run of consecutive equal elements (by eq) of
/// [first, last), moved to the front in order, and returns the new logical end, as
/// std::unique; v.resize(end - v.begin()) trims the rest. Waits for the devices.
template <class T, class Eq = cuda::std::equal_to<>>
segmented_iterator<T, false> unique(segmented_iterator<T, false> first, segmented_iterator<T, false> last, Eq eq = {}) {
  detail::check_device_operator<Eq>();
  const nvtx_range mark("unique", static_cast<std::uint64_t>(last - first));
  return detail::unique_into("unique", first, last, first, eq);
}

template <class T, class Eq = cuda::std::equal_to<>>
segmented_iterator<T, false> unique(distributed_vector<T>& v, Eq eq = {}) {
  return multigpu::unique(v.begin(), v.end(), eq);
}

// ---- partitions ---------------------------------------------------------------------------

/// Puts the elements of [first, last) for which pred is true before those for which it is
/// false, each group in its input order, and returns the start of the second group, as
/// std::stable_partition: both groups are selected per slot (as copy_if's layout-keeping
/// form), then written back densely. Waits for the devices, the writing back included.
template <class T, class Pred>
segmented_iterator<T, false> stable_partition(segmented_iterator<T, false> first, segmented_iterator<T, false> last,
                                              Pred pred) {
  detail::check_device_operator<Pred>();
  const nvtx_range mark("stable_partition", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("stable_partition", first, last);
  if (count == 0) return first;
  detail::range_ref<T> range(*v, begin, count);
  const distributed_vector<T> yes = detail::select_pieces(range, pred);
  const distributed_vector<T> no = detail::select_pieces(range, detail::negated<Pred>{pred});
  distributed_vector<T>& target = *first.container();
  target.copy_range_from(yes, 0, yes.size(), begin);
  target.copy_range_from(no, 0, no.size(), begin + yes.size());
  detail::wait_for_groups({&target.group()});
  return first + static_cast<std::ptrdiff_t>(yes.size());
}

template <class T, class Pred>
segmented_iterator<T, false> stable_partition(distributed_vector<T>& v, Pred pred) {
  return multigpu::stable_partition(v.begin(), v.end(), pred);
}

/// As stable_partition (which order within each group std::partition leaves is unspecified;
/// this one keeps the input order).
template <class T, class Pred>
segmented_iterator<T, false> partition(segmented_iterator<T, false> first, segmented_iterator<T, false> last,
                                       Pred pred) {
  return multigpu::stable_partition(first, last, pred);
}

template <class T, class Pred>
segmented_iterator<T, false> partition(distributed_vector<T>& v, Pred pred) {
  return multigpu::stable_partition(v.begin(), v.end(), pred);
}

/// Copies the elements of [first, last) for which pred is true to out_true and the others to
/// out_false, each in order, and returns both ends, as std::partition_copy. The outputs may be
/// any vectors on any groups; each needs room for its group (std::invalid_argument otherwise,
/// with nothing written to either). Waits for the devices, the copies into the outputs
/// included.
template <segmented_iterator_type I, class U, class Pred>
std::pair<segmented_iterator<U, false>, segmented_iterator<U, false>>
partition_copy(I first, I last, segmented_iterator<U, false> out_true, segmented_iterator<U, false> out_false,
               Pred pred) {
  detail::check_device_operator<Pred>();
  using T = typename I::value_type;
  static_assert(std::is_same_v<T, U>, "multigpu::partition_copy: the outputs' element type must be the input's");
  const nvtx_range mark("partition_copy", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("partition_copy", first, last);
  if (count == 0) return {out_true, out_false};
  detail::range_ref<T> range(*v, begin, count);
  const distributed_vector<T> yes = detail::select_pieces(range, pred);
  const distributed_vector<T> no = detail::select_pieces(range, detail::negated<Pred>{pred});
  auto room = [&](const segmented_iterator<U, false>& out, std::size_t needed, const char* which) {
    const std::size_t size = out.container() ? out.container()->size() : 0;
    const std::size_t free = out.container() && out.index() <= size ? size - out.index() : 0;
    MULTIGPU_EXPECTS(needed <= free, detail::concat("partition_copy: ", needed, " of the ", count, " elements go to ",
                                                    which, ", which has room for ", free,
                                                    ": nothing was written; make room for them"));
  };
  room(out_true, yes.size(), "the output of those that pass");
  room(out_false, no.size(), "the output of those that fail");
  if (!yes.empty()) out_true.container()->copy_range_from(yes, 0, yes.size(), out_true.index());
  if (!no.empty()) out_false.container()->copy_range_from(no, 0, no.size(), out_false.index());
  detail::wait_for_groups({yes.empty() ? nullptr : &out_true.container()->group(),
                           no.empty() ? nullptr : &out_false.container()->group()});
  return {out_true + static_cast<std::ptrdiff_t>(yes.size()), out_false + static_cast<std::ptrdiff_t>(no.size())};
}

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, views::take, ...) ----
// Each takes the view in place of [first, last) and does what that form does.

namespace detail {
/// A view whose elements an algorithm may write in place (its iterators are not const).
template <class R>
concept writable_segmented_range =
    segmented_range<R> &&
    std::same_as<std::ranges::iterator_t<R>, segmented_iterator<std::ranges::range_value_t<R>, false>>;
}  // namespace detail

template <segmented_range R, class Pred>
auto copy_if(R&& r, Pred pred) {
  return multigpu::copy_if(std::ranges::begin(r), std::ranges::end(r), pred);
}
template <segmented_range R, class U, class Pred>
segmented_iterator<U, false> copy_if(R&& r, segmented_iterator<U, false> out, Pred pred) {
  return multigpu::copy_if(std::ranges::begin(r), std::ranges::end(r), out, pred);
}

template <segmented_range R, class Pred>
auto remove_copy_if(R&& r, Pred pred) {
  return multigpu::remove_copy_if(std::ranges::begin(r), std::ranges::end(r), pred);
}
template <segmented_range R, class U, class Pred>
segmented_iterator<U, false> remove_copy_if(R&& r, segmented_iterator<U, false> out, Pred pred) {
  return multigpu::remove_copy_if(std::ranges::begin(r), std::ranges::end(r), out, pred);
}

template <detail::writable_segmented_range R, class Pred>
auto remove_if(R&& r, Pred pred) {
  return multigpu::remove_if(std::ranges::begin(r), std::ranges::end(r), pred);
}

template <segmented_range R, class Eq = cuda::std::equal_to<>>
  requires(!segmented_iterator_type<Eq>)  // (view, out) is the STL form below
auto unique_copy(R&& r, Eq eq = {}) {
  return multigpu::unique_copy(std::ranges::begin(r), std::ranges::end(r), eq);
}
template <segmented_range R, class U, class Eq = cuda::std::equal_to<>>
segmented_iterator<U, false> unique_copy(R&& r, segmented_iterator<U, false> out, Eq eq = {}) {
  return multigpu::unique_copy(std::ranges::begin(r), std::ranges::end(r), out, eq);
}

template <detail::writable_segmented_range R, class Eq = cuda::std::equal_to<>>
auto unique(R&& r, Eq eq = {}) {
  return multigpu::unique(std::ranges::begin(r), std::ranges::end(r), eq);
}

template <detail::writable_segmented_range R, class Pred>
auto stable_partition(R&& r, Pred pred) {
  return multigpu::stable_partition(std::ranges::begin(r), std::ranges::end(r), pred);
}
template <detail::writable_segmented_range R, class Pred>
auto partition(R&& r, Pred pred) {
  return multigpu::stable_partition(std::ranges::begin(r), std::ranges::end(r), pred);
}

template <segmented_range R, class U, class Pred>
std::pair<segmented_iterator<U, false>, segmented_iterator<U, false>>
partition_copy(R&& r, segmented_iterator<U, false> out_true, segmented_iterator<U, false> out_false, Pred pred) {
  return multigpu::partition_copy(std::ranges::begin(r), std::ranges::end(r), out_true, out_false, pred);
}

}  // namespace multigpu
