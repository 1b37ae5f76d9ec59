#pragma once
// count and count_if: a transform_reduce that sums 0/1.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/transform_reduce.hpp>
#include <multigpu/core/nvtx.hpp>

namespace multigpu {

template <segmented_iterator_type I, class Pred>
std::size_t count_if(I first, I last, Pred pred) {
  const nvtx_range range("count_if", static_cast<std::uint64_t>(last - first));
  return transform_reduce(first, last, std::size_t{0}, cuda::std::plus<>{}, detail::count_functor<Pred>{pred});
}

template <class T, class Pred>
std::size_t count_if(const distributed_vector<T>& v, Pred pred) {
  return count_if(v.begin(), v.end(), pred);
}

template <segmented_iterator_type I>
std::size_t count(I first, I last, const typename I::value_type& value) {
  const nvtx_range range("count", static_cast<std::uint64_t>(last - first));
  return count_if(first, last, detail::equal_to_value<typename I::value_type>{value});
}

template <class T>
std::size_t count(const distributed_vector<T>& v, const std::type_identity_t<T>& value) {
  return count(v.begin(), v.end(), value);
}

/// count_if and count over a view of part of a vector (std::ranges::subrange, ...).
template <segmented_range R, class Pred>
std::size_t count_if(R&& r, Pred pred) {
  return multigpu::count_if(std::ranges::begin(r), std::ranges::end(r), pred);
}

template <segmented_range R>
std::size_t count(R&& r, const std::ranges::range_value_t<R>& value) {
  return multigpu::count(std::ranges::begin(r), std::ranges::end(r), value);
}

}  // namespace multigpu
