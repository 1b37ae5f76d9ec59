#pragma once
// gather and scatter through an index map, by requests between segments. Each segment of
// the map classifies its indices by the segment that owns them (binary search over the
// target layout's offsets), checks them (the first bad position is kept with atomicMin, so
// the map never travels to the host), and radix-sorts its positions by owner. The counts
// per (requester, owner) pair make an exchange_plan:
// - gather: the requesters send local indices to the owners, each owner reads its own
//   elements, and the values come back by the transposed plan, then land at their
//   positions;
// - scatter: the sources send (local index, value) pairs to the owners, which write them.
// No kernel ever reads another device's memory; only the all-to-all moves data. A group of
// one slot needs no requests: its indices are checked, then one kernel does the work.

#include <multigpu/algorithm/detail/collective/all_to_all.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/algorithm/detail/local/tuning.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace multigpu::detail {

using position_t = unsigned long long;  // atomicMin has this overload
inline constexpr position_t no_position = std::numeric_limits<position_t>::max();

/// owner[i]: the segment of `offsets` (k + 1 entries) holding map[i], or k when map[i] is
/// out of [0, size); position[i] = i. Bad entries record first_index + i in *first_bad.
template <class I>
__global__ void classify_indices(const I* map, std::size_t n, std::size_t first_index, const std::size_t* offsets,
                                 std::size_t k, std::uint32_t* owner, position_t* position, position_t* first_bad) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const I index = map[i];
  position[i] = i;
  bool bad = false;
  if constexpr (std::is_signed_v<I>) bad = index < 0;
  if (!bad) bad = static_cast<std::size_t>(index) >= offsets[k];
  if (bad) {
    atomicMin(first_bad, static_cast<position_t>(first_index + i));
    owner[i] = static_cast<std::uint32_t>(k);
    return;
  }
  // The last segment starting at or before index (empty segments share the next offset).
  const std::size_t x = static_cast<std::size_t>(index);
  std::size_t lo = 0, hi = k;  // answer in [0, k)
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  owner[i] = static_cast<std::uint32_t>(lo);
}

/// starts[s] = the first position of the sorted owners that is >= s, for s in [0, k].
template <class Owner>
__global__ void owner_starts(const Owner* owner, std::size_t n, std::size_t k, std::size_t* starts) {
  const std::size_t s = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (s > k) return;
  std::size_t lo = 0, hi = n;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (owner[mid] < s)
      lo = mid + 1;
    else
      hi = mid;
  }
  starts[s] = lo;
}

/// local[j] = map[position[j]] - offsets[owner[j]]: the index inside the owner's segment.
template <class I>
__global__ void local_indices(const I* map, const position_t* position, const std::uint32_t* owner,
                              const std::size_t* offsets, std::size_t n, position_t* local) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < n) local[j] = static_cast<position_t>(static_cast<std::size_t>(map[position[j]]) - offsets[owner[j]]);
}

/// out[j] = in[index[j]].
template <class T>
__global__ void gather_local(const T* in, const position_t* index, std::size_t n, T* out) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < n) out[j] = in[index[j]];
}

/// out[index[j]] = in[j].
template <class T>
__global__ void scatter_local(const T* in, const position_t* index, std::size_t n, T* out) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < n) out[index[j]] = in[j];
}

/// Records first_index + i in *first_bad for every map[i] outside [0, size).
template <class I>
__global__ void check_indices(const I* map, std::size_t n, std::size_t first_index, std::size_t size,
                              position_t* first_bad) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const I index = map[i];
  bool bad = false;
  if constexpr (std::is_signed_v<I>) bad = index < 0;
  if (bad || static_cast<std::size_t>(index) >= size) atomicMin(first_bad, static_cast<position_t>(first_index + i));
}

/// One slot: out[i] = in[map[i]] (gather) or out[map[i]] = in[i] (scatter), in place.
template <bool Scatter, class I, class T>
__global__ void by_index_kernel(const T* in, const I* map, std::size_t n, T* out) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const auto index = static_cast<std::size_t>(map[i]);
  if constexpr (Scatter)
    out[index] = in[i];
  else
    out[i] = in[index];
}

/// One map segment's requests, sorted by owner.
struct request_list {
  device_buffer<position_t> position;  // where in the map segment each request came from
  device_buffer<position_t> local;     // the index inside the owner's segment
  std::vector<std::size_t> starts;     // k + 1 entries: requests for owner s are [starts[s], starts[s+1])
};

/// std::out_of_range naming map[first_bad] and its value, unless first_bad is no_position.
template <class I>
void throw_if_bad(const char* algorithm, const distributed_vector<I>& map, position_t first_bad, std::size_t size) {
  if (first_bad == no_position) return;
  const I value = map.read(static_cast<std::size_t>(first_bad));
  throw std::out_of_range(concat("multigpu: ", algorithm, ": map[", first_bad, "] = ", +value,
                                 " is out of range for a vector of size ", size));
}

/// The whole operation when the group has one slot: check every index on the device, then
/// one kernel. `input`, `map` and `output` are lined up (one segment each).
template <bool Scatter, class I, class T>
void by_index_one_slot(const char* algorithm, const distributed_vector<T>& input, const distributed_vector<I>& map,
                       distributed_vector<T>& output) {
  const device_group& group = map.group();
  const std::size_t n = map.size();
  device_guard guard(group.device(0));
  cudaStream_t stream = group.stream(0);
  device_buffer<position_t> bad(1, group.pool(0), stream);
  MULTIGPU_CUDA_TRY(cudaMemsetAsync(bad.data(), 0xff, sizeof(position_t), stream));
  const std::size_t size = Scatter ? output.size() : input.size();
  check_indices<<<blocks_for(n, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
      map.segment(0).data(), n, 0, size, bad.data());
  check_launch("check_indices");
  position_t first_bad = no_position;
  MULTIGPU_CUDA_TRY(cudaMemcpyAsync(&first_bad, bad.data(), sizeof(position_t), cudaMemcpyDeviceToHost, stream));
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
  throw_if_bad(algorithm, map, first_bad, size);
  by_index_kernel<Scatter><<<blocks_for(n, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
      input.segment(0).data(), map.segment(0).data(), n, output.segment(0).data());
  check_launch(Scatter ? "scatter" : "gather");
}

/// Classifies and sorts every map segment's indices by owner (the segments of
/// `target_layout`), checks them, and returns the requests and the exchange plan. Throws
/// std::out_of_range naming the first bad map position when an index is outside
/// [0, target_layout.size()).
template <class I>
exchange_plan plan_requests(const char* algorithm, const distributed_vector<I>& map, const distribution& target_layout,
                            std::vector<request_list>& requests) {
  static_assert(std::is_integral_v<I> && !std::is_same_v<I, bool>, "the map must hold integer indices");
  const device_group& group = map.group();
  const std::size_t k = group.size();
  MULTIGPU_EXPECTS(k < std::numeric_limits<std::uint32_t>::max(), concat(algorithm, ": too many slots"));
  std::vector<std::size_t> offsets(k + 1);
  for (std::size_t s = 0; s < k; ++s) offsets[s] = target_layout.segment_offset(s);
  offsets[k] = target_layout.size();
  const int owner_bits = std::max(1, static_cast<int>(std::bit_width(k)));  // owners 0..k

  requests.clear();
  requests.resize(k);
  std::vector<device_buffer<std::size_t>> d_offsets(k), d_starts(k);
  std::vector<device_buffer<position_t>> d_bad(k);
  std::vector<position_t> bad(k, no_position);
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t n = map.layout().segment_size(s);
    requests[s].starts.assign(k + 1, 0);
    if (n == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    device_pool& pool = group.pool(s);
    d_offsets[s] = device_buffer<std::size_t>(k + 1, pool, stream);
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(d_offsets[s].data(), offsets.data(), (k + 1) * sizeof(std::size_t),
                                      cudaMemcpyHostToDevice, stream));
    d_bad[s] = device_buffer<position_t>(1, pool, stream);
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(d_bad[s].data(), 0xff, sizeof(position_t), stream));
    device_buffer<std::uint32_t> owner(n, pool, stream), sorted_owner(n, pool, stream);
    device_buffer<position_t> position(n, pool, stream);
    requests[s].position = device_buffer<position_t>(n, pool, stream);
    classify_indices<<<blocks_for(n, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        map.segment(s).data(), n, map.layout().segment_offset(s), d_offsets[s].data(), k, owner.data(),
        position.data(), d_bad[s].data());
    check_launch("classify_indices");
    cub_call(pool, stream, "cub::DeviceRadixSort::SortPairs", [&](void* temp, std::size_t& bytes) {
      return cub::DeviceRadixSort::SortPairs(temp, bytes, owner.data(), sorted_owner.data(), position.data(),
                                             requests[s].position.data(), n, 0, owner_bits, stream);
    });
    d_starts[s] = device_buffer<std::size_t>(k + 1, pool, stream);
    owner_starts<<<blocks_for(k + 1, tuning::search_threads), tuning::search_threads, 0, stream>>>(
        sorted_owner.data(), n, k, d_starts[s].data());
    check_launch("owner_starts");
    // Local indices of the valid requests (bad ones sort last, past starts[k]).
    requests[s].local = device_buffer<position_t>(n, pool, stream);
    local_indices<<<blocks_for(n, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        map.segment(s).data(), requests[s].position.data(), sorted_owner.data(), d_offsets[s].data(), n,
        requests[s].local.data());
    check_launch("local_indices");
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(requests[s].starts.data(), d_starts[s].data(), (k + 1) * sizeof(std::size_t),
                                      cudaMemcpyDeviceToHost, stream));
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(&bad[s], d_bad[s].data(), sizeof(position_t), cudaMemcpyDeviceToHost, stream));
  }
  position_t first_bad = no_position;
  for (std::size_t s = 0; s < k; ++s) {
    if (map.layout().segment_size(s) == 0) continue;
    device_guard guard(group.device(s));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(group.stream(s)));
    first_bad = std::min(first_bad, bad[s]);
  }
  throw_if_bad(algorithm, map, first_bad, target_layout.size());
  exchange_plan plan(k);
  for (std::size_t s = 0; s < k; ++s)
    for (std::size_t d = 0; d < k; ++d) plan.count(s, d) = requests[s].starts[d + 1] - requests[s].starts[d];
  return plan;
}

/// A map lined up with `reference`'s layout and group: the map itself or a copy.
template <class I, class T>
const distributed_vector<I>& lined_up_map(const distributed_vector<I>& map, const distributed_vector<T>& reference,
                                          std::optional<distributed_vector<I>>& copy) {
  if (map.group() == reference.group() && map.layout() == reference.layout()) return map;
  copy.emplace(reference.group(), reference.layout());
  detail::vector_access::copy_range_from(*copy, map, 0, map.size(), 0);
  return *copy;
}

inline void expect_same_group(const char* algorithm, const char* a, const device_group& ga, const char* b,
                              const device_group& gb) {
  MULTIGPU_EXPECTS(ga == gb, concat(algorithm, ": the ", a, " is on a group of ", ga.size(), " slots and the ", b,
                                    " on a different group of ", gb.size(), " slots; they must share one group"));
}

inline void expect_map_length(const char* algorithm, std::size_t map_size, const char* what, std::size_t size) {
  MULTIGPU_EXPECTS(map_size == size, concat(algorithm, ": the map has ", map_size, " indices but the ", what, " has ",
                                            size, " elements; they must be the same length"));
}

template <class I, class T>
void gather_impl(const distributed_vector<I>& map_in, const distributed_vector<T>& input, distributed_vector<T>& output) {
  constexpr const char* algorithm = "gather";
  expect_same_group(algorithm, "input", input.group(), "output", output.group());
  expect_map_length(algorithm, map_in.size(), "output", output.size());
  MULTIGPU_EXPECTS(static_cast<const void*>(&input) != static_cast<const void*>(&output),
                   "gather: the output must not be the input");
  if (output.empty()) return;
  std::optional<distributed_vector<I>> copy;
  const distributed_vector<I>& map = lined_up_map(map_in, output, copy);
  const device_group& group = output.group();
  const std::size_t k = group.size();
  if (k == 1) return by_index_one_slot<false>(algorithm, input, map, output);

  std::vector<request_list> requests;
  const exchange_plan plan = plan_requests(algorithm, map, input.layout(), requests);

  // Indices to the owners.
  std::vector<position_t*> send(k, nullptr), at_owner(k, nullptr);
  std::vector<device_buffer<position_t>> owner_indices(k);
  for (std::size_t s = 0; s < k; ++s) {
    send[s] = requests[s].local.data();
    const std::size_t m = plan.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    owner_indices[s] = device_buffer<position_t>(m, group.pool(s), group.stream(s));
    at_owner[s] = owner_indices[s].data();
  }
  all_to_all(group, plan, send, at_owner);

  // Owners read their elements; the values go back by the transposed plan.
  std::vector<device_buffer<T>> values(k), answers(k);
  std::vector<T*> value_data(k, nullptr), answer_data(k, nullptr);
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t m = plan.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    values[s] = device_buffer<T>(m, group.pool(s), stream);
    value_data[s] = values[s].data();
    gather_local<<<blocks_for(m, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        input.segment(s).data(), owner_indices[s].data(), m, value_data[s]);
    check_launch("gather_local");
  }
  const exchange_plan back = plan.transposed();
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t m = back.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    answers[s] = device_buffer<T>(m, group.pool(s), group.stream(s));
    answer_data[s] = answers[s].data();
  }
  all_to_all(group, back, value_data, answer_data);

  // Each answer lands at the position its request came from.
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t m = back.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    scatter_local<<<blocks_for(m, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        answer_data[s], requests[s].position.data(), m, output.segment(s).data());
    check_launch("scatter_local");
  }
}

template <class I, class T>
void scatter_impl(const distributed_vector<T>& input, const distributed_vector<I>& map_in, distributed_vector<T>& output) {
  constexpr const char* algorithm = "scatter";
  expect_same_group(algorithm, "input", input.group(), "output", output.group());
  expect_map_length(algorithm, map_in.size(), "input", input.size());
  MULTIGPU_EXPECTS(static_cast<const void*>(&input) != static_cast<const void*>(&output),
                   "scatter: the output must not be the input");
  // out[map[i]] = in[i] with the map as the output would overwrite indices other threads
  // have yet to read (a precondition of thrust::scatter too).
  MULTIGPU_EXPECTS(static_cast<const void*>(&map_in) != static_cast<const void*>(&output),
                   "scatter: the output must not be the map");
  if (input.empty()) return;
  std::optional<distributed_vector<I>> copy;
  const distributed_vector<I>& map = lined_up_map(map_in, input, copy);
  const device_group& group = input.group();
  const std::size_t k = group.size();
  if (k == 1) return by_index_one_slot<true>(algorithm, input, map, output);

  std::vector<request_list> requests;
  const exchange_plan plan = plan_requests(algorithm, map, output.layout(), requests);

  // Values in request order, then (index, value) pairs to the owners.
  std::vector<device_buffer<T>> outgoing(k), incoming(k);
  std::vector<device_buffer<position_t>> incoming_index(k);
  std::vector<position_t*> send_index(k, nullptr), receive_index(k, nullptr);
  std::vector<T*> send_values(k, nullptr), receive_values(k, nullptr);
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t n = plan.sent(s);
    if (n == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    outgoing[s] = device_buffer<T>(n, group.pool(s), stream);
    gather_local<<<blocks_for(n, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        input.segment(s).data(), requests[s].position.data(), n, outgoing[s].data());
    check_launch("gather_local");
    send_index[s] = requests[s].local.data();
    send_values[s] = outgoing[s].data();
  }
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t m = plan.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    incoming[s] = device_buffer<T>(m, group.pool(s), group.stream(s));
    incoming_index[s] = device_buffer<position_t>(m, group.pool(s), group.stream(s));
    receive_index[s] = incoming_index[s].data();
    receive_values[s] = incoming[s].data();
  }
  all_to_all(group, plan, send_index, receive_index);
  all_to_all(group, plan, send_values, receive_values);
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t m = plan.received(s);
    if (m == 0) continue;
    device_guard guard(group.device(s));
    cudaStream_t stream = group.stream(s);
    scatter_local<<<blocks_for(m, tuning::elementwise_threads), tuning::elementwise_threads, 0, stream>>>(
        incoming[s].data(), incoming_index[s].data(), m, output.segment(s).data());
    check_launch("scatter_local");
  }
}

}  // namespace multigpu::detail
