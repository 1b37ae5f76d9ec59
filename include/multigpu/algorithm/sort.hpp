#pragma once
// sort, stable_sort, sort_by_key, is_sorted, lower_bound and upper_bound on distributed
// vectors. The sort is a sample sort across segments (detail/sort/sort.hpp): every segment sorts
// locally with CUB, buckets bounded by splitters chosen from regular samples are exchanged
// all-to-all, each receiver merges its sorted runs, and a last exchange puts the result back
// into the vector's own layout (segment sizes never change). Extra device memory: about
// twice the data per device at the peak (the received runs and the merge's second buffer,
// or the local radix sort's second buffer and the received runs).
//
// Order:
// - Arithmetic keys (integers, float, double) with the default comparator
//   (cuda::std::less<> or std::less) use CUB's radix sort and its order: for float and
//   double, -0.0 and +0.0 are equivalent (they keep their input order); NaNs whose sign
//   bit is clear go after +infinity, NaNs whose sign bit is set before -infinity (ordered by
//   their bits among themselves). detail::radix_less<K> is that order as a comparator.
// - Any other comparator uses CUB's merge sort. It must be a strict weak order (a
//   comparator that is not, such as `<` on floats holding NaN, is the caller's bug: the
//   result is then some permutation, not a sorted one), callable on the device and on the
//   host (write it as a functor or a __host__ __device__ lambda): splitters are picked on
//   the host.
// - Every sort here is stable: sort, stable_sort and sort_by_key all keep equal keys in
//   input order (stable_sort promises it; sort does not promise it).
//
// The whole vector is sorted; sorting a part of one is not offered.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/sort/sort.hpp>

#include <cuda/std/functional>

namespace multigpu {

/// Sorts v by comp (ascending by default).
template <class T, class Comp = cuda::std::less<>>
void sort(distributed_vector<T>& v, Comp comp = {}) {
  detail::sort_in_layout(v, static_cast<distributed_vector<detail::no_values>*>(nullptr), comp);
}

/// Sorts v by comp, keeping equivalent elements in their input order.
template <class T, class Comp = cuda::std::less<>>
void stable_sort(distributed_vector<T>& v, Comp comp = {}) {
  detail::sort_in_layout(v, static_cast<distributed_vector<detail::no_values>*>(nullptr), comp);
}

/// Sorts keys by comp and moves values along: values[i] follows keys[i]. Equal keys keep
/// their input order. keys and values must be on one group and the same length
/// (std::invalid_argument otherwise); their layouts may differ (each keeps its own).
template <class K, class V, class Comp = cuda::std::less<>>
void sort_by_key(distributed_vector<K>& keys, distributed_vector<V>& values, Comp comp = {}) {
  detail::sort_by_key_impl("sort_by_key", keys, values, comp);
}

/// As sort_by_key; the name says that the order of equal keys is kept.
template <class K, class V, class Comp = cuda::std::less<>>
void stable_sort_by_key(distributed_vector<K>& keys, distributed_vector<V>& values, Comp comp = {}) {
  detail::sort_by_key_impl("stable_sort_by_key", keys, values, comp);
}

/// True when no element comes before (by comp) the one ahead of it. comp must be callable
/// on the host as well (segment boundaries are compared there).
template <class T, class Comp = cuda::std::less<>>
bool is_sorted(const distributed_vector<T>& v, Comp comp = {}) {
  return detail::is_sorted_impl(v, comp);
}

/// In a vector sorted by comp: the first element that does not come before value, or end().
template <class T, class Comp = cuda::std::less<>>
typename distributed_vector<T>::const_iterator lower_bound(const distributed_vector<T>& v,
                                                           const std::type_identity_t<T>& value, Comp comp = {}) {
  return v.begin() + static_cast<std::ptrdiff_t>(detail::bound_impl(v, value, comp, false));
}

/// In a vector sorted by comp: the first element that value comes before, or end().
template <class T, class Comp = cuda::std::less<>>
typename distributed_vector<T>::const_iterator upper_bound(const distributed_vector<T>& v,
                                                           const std::type_identity_t<T>& value, Comp comp = {}) {
  return v.begin() + static_cast<std::ptrdiff_t>(detail::bound_impl(v, value, comp, true));
}

}  // namespace multigpu
