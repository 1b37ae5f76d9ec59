#pragma once
// unique and unique_copy: the first element of every run of consecutive equal elements.
// unique compares neighbours, eq(x[i - 1], x[i]), within a slot and across slot boundaries
// alike, as CUB and Thrust do (std::unique compares with the element it kept last, which
// differs only for a predicate that is not an equivalence): the slot count never changes the
// result. The same two forms as copy_if (copy_if.hpp): layout-keeping, and STL into an output.
// Every form also takes a view of part of a vector in place of [first, last).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/select.hpp>

#include <cuda/std/functional>

#include <ranges>
#include <utility>

namespace multigpu {

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

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, views::take, ...) ----
// Each takes the view in place of [first, last) and does what that form does.

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

}  // namespace multigpu
