#pragma once
// The partitions: stable_partition, partition (stable too) and partition_copy, on the
// selection of copy_if (copy_if.hpp), written back densely. Every form also takes a view of
// part of a vector in place of [first, last).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/select.hpp>

#include <cuda/std/functional>

#include <ranges>
#include <utility>

namespace multigpu {

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
  detail::vector_access::copy_range_from(target, yes, 0, yes.size(), begin);
  detail::vector_access::copy_range_from(target, no, 0, no.size(), begin + yes.size());
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
  if (!yes.empty()) detail::vector_access::copy_range_from(*out_true.container(), yes, 0, yes.size(), out_true.index());
  if (!no.empty()) detail::vector_access::copy_range_from(*out_false.container(), no, 0, no.size(), out_false.index());
  detail::wait_for_groups({yes.empty() ? nullptr : &out_true.container()->group(),
                           no.empty() ? nullptr : &out_false.container()->group()});
  return {out_true + static_cast<std::ptrdiff_t>(yes.size()), out_false + static_cast<std::ptrdiff_t>(no.size())};
}

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, views::take, ...) ----
// Each takes the view in place of [first, last) and does what that form does.

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
