#pragma once
// equal: true when both ranges have the same length and equal elements, counted as
// mismatches by a transform_reduce (the second range is redistributed if it does not line
// up with the first).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/transform_reduce.hpp>
#include <multigpu/core/nvtx.hpp>

namespace multigpu {

template <segmented_iterator_type I1, segmented_iterator_type I2>
bool equal(I1 first1, I1 last1, I2 first2, I2 last2) {
  const nvtx_range range("equal", static_cast<std::uint64_t>(last1 - first1));
  // Both ranges are checked (same vector, ordered, inside it) before their lengths compare.
  [[maybe_unused]] auto [v1, begin1, count1] = detail::unpack_range("equal", first1, last1);
  [[maybe_unused]] auto [v2, begin2, count2] = detail::unpack_range("equal", first2, last2);
  if (count1 != count2) return false;
  if (count1 == 0) return true;
  return transform_reduce(first1, last1, first2, std::size_t{0}, cuda::std::plus<>{}, detail::mismatch_functor{}) == 0;
}

template <class T>
bool equal(const distributed_vector<T>& a, const distributed_vector<T>& b) {
  return equal(a.begin(), a.end(), b.begin(), b.end());
}

/// Two views of parts of vectors (std::ranges::subrange, ...): the same length and elements.
template <segmented_range R1, segmented_range R2>
bool equal(R1&& a, R2&& b) {
  return multigpu::equal(std::ranges::begin(a), std::ranges::end(a), std::ranges::begin(b), std::ranges::end(b));
}

}  // namespace multigpu
