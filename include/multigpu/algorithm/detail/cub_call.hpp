#pragma once
// CUB's two-phase calls with temporary storage from the slot's pool: the first call asks
// for the size, the second runs. The storage is allocated and released on the same stream,
// so it is reused by the next call at no cost.

#include <multigpu/core/error.hpp>
#include <multigpu/memory/device_pool.hpp>

#include <cstddef>
#include <source_location>

namespace multigpu::detail {

inline void check_cub(cudaError_t status, const char* what,
                      const std::source_location& where) {
  if (status != cudaSuccess)
    throw_cuda_error(status, what, where.file_name(), static_cast<int>(where.line()));
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

/// Checks the launch of one of our own kernels.
inline void check_launch(const char* what,
                         const std::source_location where = std::source_location::current()) {
  check_cub(cudaGetLastError(), what, where);
}

}  // namespace multigpu::detail
