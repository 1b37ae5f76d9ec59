#pragma once
// min_element and max_element: iterators to the first minimum / maximum in global order.
// Each element is paired with its global index and the pairs are reduced with an operator
// that prefers the smaller value and, between equivalent values, the smaller index: that
// operator is commutative, so CUB's fastest reduction applies.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/min_max_element.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>

#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>

namespace multigpu {
/// The first element no other element is less than (by `less`), or last when empty.
template <segmented_iterator_type I, class Less = cuda::std::less<>>
I min_element(I first, I last, Less less = {}) {
  return detail::best_element("min_element", first, last, less);
}

/// The first element no other element is greater than, or last when empty.
template <segmented_iterator_type I, class Less = cuda::std::less<>>
I max_element(I first, I last, Less less = {}) {
  using by = typename detail::greater_than<typename I::value_type>::template by<Less>;
  return detail::best_element("max_element", first, last, by{less});
}

template <class T, class Less = cuda::std::less<>>
auto min_element(const distributed_vector<T>& v, Less less = {}) {
  return min_element(v.begin(), v.end(), less);
}

template <class T, class Less = cuda::std::less<>>
auto max_element(const distributed_vector<T>& v, Less less = {}) {
  return max_element(v.begin(), v.end(), less);
}

/// Views of parts of vectors.
template <segmented_range R, class Less = cuda::std::less<>>
auto min_element(R&& r, Less less = {}) {
  return multigpu::min_element(std::ranges::begin(r), std::ranges::end(r), less);
}
template <segmented_range R, class Less = cuda::std::less<>>
auto max_element(R&& r, Less less = {}) {
  return multigpu::max_element(std::ranges::begin(r), std::ranges::end(r), less);
}

}  // namespace multigpu
