#pragma once
// copy_if, remove_copy_if, remove_if.
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
// Every form also takes a view of part of a vector in place of [first, last).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/select.hpp>

#include <cuda/std/functional>

#include <ranges>
#include <utility>

namespace multigpu {

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

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, views::take, ...) ----
// Each takes the view in place of [first, last) and does what that form does.

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

}  // namespace multigpu
