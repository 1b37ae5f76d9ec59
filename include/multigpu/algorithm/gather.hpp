#pragma once
// gather and scatter through an index map (detail/gather.hpp):
//   gather(map, input, output):  output[i] = input[map[i]]
//   scatter(input, map, output): output[map[i]] = input[i]
// Any element may live on any segment. The map is a distributed vector of integers in any
// layout (on any group: a map not lined up with the output (gather) or the input (scatter)
// is copied into that layout first), or a host-side std::vector / std::span, uploaded into
// that layout. Requests are grouped per (requesting segment, owning segment) and exchanged
// all-to-all (indices, then values); no kernel reads another device's memory.
//
// Errors: input and output on different groups, or a map whose length differs from the
// output (gather) / input (scatter): std::invalid_argument naming both; output == input, or
// in scatter output == map: std::invalid_argument; an index outside [0, size of the indexed vector):
// std::out_of_range naming the first bad map position and its value, found on the devices
// (nothing is written then). In scatter, several map entries naming one element leave one
// of their values there, which one is unspecified (as in thrust::scatter).

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/gather.hpp>

#include <span>
#include <vector>

namespace multigpu {

/// output[i] = input[map[i]] for i in [0, map.size()); output.size() == map.size().
template <class I, class T>
void gather(const distributed_vector<I>& map, const distributed_vector<T>& input, distributed_vector<T>& output) {
  detail::gather_impl(map, input, output);
}

/// As above with a host-side map.
template <class I, class T>
void gather(std::span<const I> map, const distributed_vector<T>& input, distributed_vector<T>& output) {
  detail::expect_map_length("gather", map.size(), "output", output.size());
  distributed_vector<I> uploaded(output.group(), output.layout());
  detail::vector_access::upload(uploaded, 0, map.data(), map.size());
  detail::gather_impl(uploaded, input, output);
}

template <class I, class T>
void gather(const std::vector<I>& map, const distributed_vector<T>& input, distributed_vector<T>& output) {
  gather(std::span<const I>(map), input, output);
}

/// output[map[i]] = input[i] for i in [0, input.size()); map.size() == input.size().
template <class I, class T>
void scatter(const distributed_vector<T>& input, const distributed_vector<I>& map, distributed_vector<T>& output) {
  detail::scatter_impl(input, map, output);
}

/// As above with a host-side map.
template <class I, class T>
void scatter(const distributed_vector<T>& input, std::span<const I> map, distributed_vector<T>& output) {
  detail::expect_map_length("scatter", map.size(), "input", input.size());
  distributed_vector<I> uploaded(input.group(), input.layout());
  detail::vector_access::upload(uploaded, 0, map.data(), map.size());
  detail::scatter_impl(input, uploaded, output);
}

template <class I, class T>
void scatter(const distributed_vector<T>& input, const std::vector<I>& map, distributed_vector<T>& output) {
  scatter(input, std::span<const I>(map), output);
}

}  // namespace multigpu
