#pragma once
// copy between vectors (any groups, any layouts: a redistribution over peers or through
// pinned host memory) and between vectors and host memory (pinned staging, all devices fed
// at once). No device code: usable from host-only translation units.

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>

#include <algorithm>
#include <iterator>
#include <memory>
#include <vector>

namespace multigpu {
namespace detail {
/// Host iterators over contiguous memory holding T: copied straight from or to that memory.
template <class It, class T>
concept contiguous_iterator_of = std::contiguous_iterator<It> && std::same_as<std::iter_value_t<It>, T>;
}  // namespace detail

/// Device to device: [first, last) into [out, out + (last - first)). Returns the end of
/// the output range. The ranges may overlap within one vector: the result is as memmove's
/// (every element read before any is written; the overlapping case goes through a
/// temporary of `last - first` elements).
template <segmented_iterator_type In, class T>
  requires std::same_as<typename In::value_type, T>
segmented_iterator<T, false> copy(In first, In last, segmented_iterator<T, false> out) {
  const nvtx_range range("copy", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("copy", first, last);
  if (count == 0) return out;
  auto& target = detail::unpack_output("copy", out, count);
  detail::vector_access::copy_range_from(target, *v, begin, count, out.index());
  return out + static_cast<std::ptrdiff_t>(count);
}

/// Whole vectors of the same length, on any two groups.
template <class T>
void copy(const distributed_vector<T>& from, distributed_vector<T>& to) {
  const nvtx_range range("copy", from.size());
  detail::expect_same_length("copy", from.size(), to.size());
  if (&from == &to) return;
  detail::vector_access::copy_range_from(to, from, 0, from.size(), 0);
}

/// Host to devices. Contiguous host ranges of T are copied straight from their memory.
template <std::input_iterator HostIt, class T>
  requires(!segmented_iterator_type<HostIt> && std::convertible_to<std::iter_reference_t<HostIt>, T>)
segmented_iterator<T, false> copy(HostIt first, HostIt last, segmented_iterator<T, false> out) {
  const nvtx_range range("copy host to devices");
  if constexpr (detail::contiguous_iterator_of<HostIt, T>) {
    const std::size_t count = static_cast<std::size_t>(std::distance(first, last));
    if (count == 0) return out;
    auto& target = detail::unpack_output("copy", out, count);
    detail::vector_access::upload(target, out.index(), std::to_address(first), count);
    return out + static_cast<std::ptrdiff_t>(count);
  } else {
    std::vector<T> staged(first, last);
    return copy(staged.begin(), staged.end(), out);
  }
}

/// Devices to host. Contiguous output of T is written in place; any other output iterator
/// is fed from a host copy.
template <segmented_iterator_type In, class HostOut>
  requires(!segmented_iterator_type<HostOut> && std::output_iterator<HostOut, typename In::value_type>)
HostOut copy(In first, In last, HostOut out) {
  using T = typename In::value_type;
  const nvtx_range range("copy devices to host", static_cast<std::uint64_t>(last - first));
  auto [v, begin, count] = detail::unpack_range("copy", first, last);
  if (count == 0) return out;
  if constexpr (detail::contiguous_iterator_of<HostOut, T>) {
    detail::vector_access::download(*v, begin, std::to_address(out), count);
    return out + static_cast<std::ptrdiff_t>(count);
  } else {
    std::vector<T> staged(count);
    detail::vector_access::download(*v, begin, staged.data(), count);
    return std::copy(staged.begin(), staged.end(), out);
  }
}

// ---- views of part of a vector (std::ranges::subrange of segmented iterators, ...) ------

/// copy(first, last, out) with [first, last) as a view: to another vector or to the host.
template <segmented_range R, class Out>
auto copy(R&& from, Out out) -> decltype(multigpu::copy(std::ranges::begin(from), std::ranges::end(from), out)) {
  return multigpu::copy(std::ranges::begin(from), std::ranges::end(from), out);
}

/// Between two views of the same length; returns the end of the output.
template <segmented_range R, segmented_range O>
auto copy(R&& from, O&& to) -> decltype(multigpu::copy(std::ranges::begin(from), std::ranges::end(from),
                                                        std::ranges::begin(to))) {
  detail::expect_same_length("copy", static_cast<std::size_t>(std::ranges::distance(from)),
                             static_cast<std::size_t>(std::ranges::distance(to)));
  return multigpu::copy(std::ranges::begin(from), std::ranges::end(from), std::ranges::begin(to));
}

}  // namespace multigpu
