#pragma once
// inclusive_scan and exclusive_scan: reduce-then-scan across devices, as a local step plus
// the executor's "exclusive scan of partials" collective (detail/collective/collectives.hpp). Every
// device but the last reduces its piece (all at once); one tiny scan on the root turns the
// partials into carries; each device then runs one CUB scan that reads its carry at run time
// through cub::FutureValue (for inclusive scans as the initial value of CUB's inclusive
// scan). No host synchronisation, 3 passes over the data per device (2 on the first).
// Pieces of up to two tiles of one block are scanned in one launch of our own instead
// (detail/local/small_scan.hpp): CUB's scan is two launches at any size.
// Scan operators must be associative; they need not be commutative. In place is allowed.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/scan.hpp>
#include <multigpu/algorithm/detail/operator_checks.hpp>
#include <multigpu/algorithm/detail/collective/collectives.hpp>
#include <multigpu/algorithm/detail/local/small_scan.hpp>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <type_traits>

namespace multigpu {

/// out[i] = x[0] op ... op x[i].
template <segmented_iterator_type In, class T, class Op = cuda::std::plus<>>
  requires std::same_as<typename In::value_type, T>
void inclusive_scan(In first, In last, segmented_iterator<T, false> out, Op op = {}) {
  detail::scan_range<false>("inclusive_scan", first, last, out, op, static_cast<const T*>(nullptr));
}

/// out[i] = init op x[0] op ... op x[i] (as std::inclusive_scan with an initial value).
template <segmented_iterator_type In, class T, class Op>
  requires std::same_as<typename In::value_type, T>
void inclusive_scan(In first, In last, segmented_iterator<T, false> out, Op op, std::type_identity_t<T> init) {
  detail::scan_range<false>("inclusive_scan", first, last, out, op, &init);
}

/// out[i] = init op x[0] op ... op x[i-1].
template <segmented_iterator_type In, class T, class Op = cuda::std::plus<>>
  requires std::same_as<typename In::value_type, T>
void exclusive_scan(In first, In last, segmented_iterator<T, false> out, std::type_identity_t<T> init, Op op = {}) {
  detail::scan_range<true>("exclusive_scan", first, last, out, op, &init);
}

template <class T, class Op = cuda::std::plus<>>
void inclusive_scan(const distributed_vector<T>& in, distributed_vector<T>& out, Op op = {}) {
  detail::expect_same_length("inclusive_scan", in.size(), out.size());
  inclusive_scan(in.begin(), in.end(), out.begin(), op);
}

template <class T, class Op>
void inclusive_scan(const distributed_vector<T>& in, distributed_vector<T>& out, Op op, std::type_identity_t<T> init) {
  detail::expect_same_length("inclusive_scan", in.size(), out.size());
  inclusive_scan(in.begin(), in.end(), out.begin(), op, init);
}

template <class T, class Op = cuda::std::plus<>>
void exclusive_scan(const distributed_vector<T>& in, distributed_vector<T>& out, std::type_identity_t<T> init,
                    Op op = {}) {
  detail::expect_same_length("exclusive_scan", in.size(), out.size());
  exclusive_scan(in.begin(), in.end(), out.begin(), init, op);
}

/// Views of parts of vectors as the input.
template <segmented_range R, class T, class Op = cuda::std::plus<>>
void inclusive_scan(R&& in, segmented_iterator<T, false> out, Op op = {}) {
  multigpu::inclusive_scan(std::ranges::begin(in), std::ranges::end(in), out, op);
}
template <segmented_range R, class T, class Op = cuda::std::plus<>>
void exclusive_scan(R&& in, segmented_iterator<T, false> out, std::type_identity_t<T> init, Op op = {}) {
  multigpu::exclusive_scan(std::ranges::begin(in), std::ranges::end(in), out, init, op);
}

}  // namespace multigpu
