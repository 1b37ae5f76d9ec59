#pragma once
// CUB's two-phase calls with temporary storage from the slot's pool: the first call asks
// for the size, the second runs. The storage is allocated and released on the same stream,
// so it is reused by the next call at no cost. Also the grid and the launch check of our own
// kernels.

#include <multigpu/core/error.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/runtime/detail/scratch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <source_location>
#include <type_traits>

namespace multigpu::detail {

inline void check_cub(cudaError_t status, const char* what,
                      const std::source_location& where) {
  if (status != cudaSuccess)
    throw_cuda_error(status, what, where.file_name(), static_cast<int>(where.line()));
}

/// Calls f with n as a 32-bit count when it fits and as a 64-bit count otherwise, as Thrust
/// does: 32-bit offsets make CUB's kernels faster.
template <class F>
cudaError_t with_count(std::size_t n, F&& f) {
  if (n <= static_cast<std::size_t>(INT32_MAX)) return f(static_cast<std::int32_t>(n));
  return f(static_cast<std::int64_t>(n));
}

/// `call(void* temp, std::size_t& bytes)` wraps one CUB device-wide call.
template <class Call>
void cub_call(device_pool& pool, cudaStream_t stream, const char* what, Call&& call,
              const std::source_location where = std::source_location::current()) {
  std::size_t bytes = 0;
  check_cub(call(nullptr, bytes), what, where);
  device_buffer<std::byte> temp(bytes, pool, stream);
  check_cub(call(static_cast<void*>(temp.data()), bytes), what, where);
}

/// One address per call type: with the item count, the key of CUB's size query.
template <class Call>
inline constexpr char call_key = 0;

/// The same with temporary storage from the slot's persistent scratch: no allocation once
/// the scratch has grown to the largest request, and no size query once the slot has seen
/// this call (the same lambda type: same call site, same types) with the same `shape`.
/// CUB's temporary size depends only on the types, the item count and the device, so
/// `shape` is the item count; a lambda calls one CUB entry point (write one lambda per
/// entry point, as the scans do with and without a carry). The step is noted in the schedule.
template <class Call>
void cub_call(slot_scratch& scratch, cudaStream_t stream, const char* what, std::size_t shape, Call&& call,
              const std::source_location where = std::source_location::current()) {
  std::size_t bytes = scratch.temporary_size(&call_key<std::remove_cvref_t<Call>>, shape, [&] {
    std::size_t query = 0;
    check_cub(call(nullptr, query), what, where);
    return query;
  });
  check_cub(call(scratch.temporary(bytes), bytes), what, where);
  observe_work(stream, what);
}

/// Checks the launch of one of our own kernels.
inline void check_launch(const char* what,
                         const std::source_location where = std::source_location::current()) {
  check_cub(cudaGetLastError(), what, where);
}

/// The grid of one of our own kernels: blocks of `threads` covering n items, one at least.
inline unsigned blocks_for(std::size_t n, unsigned threads) {
  return static_cast<unsigned>(std::max<std::size_t>(1, (n + threads - 1) / threads));
}

}  // namespace multigpu::detail
