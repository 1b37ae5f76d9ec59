#pragma once
// The selection steps behind the size-changing algorithms (copy_if.hpp, unique.hpp,
// partition.hpp) and reduce_by_key's layout-keeping form: one CUB selection per piece into
// given storage, the survivor counts read back in one wait, and the survivors' moves to their
// global positions for the STL forms. Contains device code.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
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
  return count_per_piece<std::int64_t>(range, [&](const piece_context& ctx, std::int64_t* n_selected) {
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
  distributed_vector<U>& target = *out.container();
  if constexpr (!std::is_same_v<T, U>) {
    return nullptr;
  } else {
    if (range.pieces.size() != 1 || !(target.group() == range.group()) || target.halo().width != 0 ||
        out.index() + range.count > target.size())
      return nullptr;
    if (&target == range.vector && out.index() < range.first + range.count && range.first < out.index() + range.count)
      return nullptr;
    const mutable_range_ref<U> to(target, out.index(), range.count);
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
  detail::vector_access::copy_range_from(target, kept, 0, kept.size(), out.index());
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

namespace detail {
/// A view whose elements an algorithm may write in place (its iterators are not const).
template <class R>
concept writable_segmented_range =
    segmented_range<R> &&
    std::same_as<std::ranges::iterator_t<R>, segmented_iterator<std::ranges::range_value_t<R>, false>>;
}  // namespace detail

}  // namespace multigpu
