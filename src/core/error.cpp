#include <multigpu/core/error.hpp>

#include <multigpu/core/device_guard.hpp>

#include <cstdio>

namespace multigpu {
namespace {

int current_device_or_unknown() noexcept {
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return -1;
  }
  return device;
}

std::string describe_failure(cudaError_t code, const char* call, int device, const char* file,
                             int line) {
  return detail::concat("multigpu: CUDA error at ", file, ":", line, ": ", call, " returned ",
                        cudaGetErrorName(code), " (", cudaGetErrorString(code), ") on device ",
                        device);
}

}  // namespace

cuda_error::cuda_error(cudaError_t code, const char* call, int device, const char* file, int line)
    : std::runtime_error(describe_failure(code, call, device, file, line)),
      code_(code),
      device_(device) {}

out_of_memory::out_of_memory(int device, std::size_t requested_bytes, std::size_t free_bytes,
                             std::string what)
    : device_(device), requested_(requested_bytes), free_(free_bytes), message_(std::move(what)) {}

namespace detail {

std::size_t free_device_bytes(int device) noexcept {
  const quiet_device_guard guard(device);
  if (!guard.ok()) return 0;
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    (void)cudaGetLastError();
    free_bytes = 0;
  }
  return free_bytes;
}

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // Clear the thread's last-error slot for non-sticky errors so that the next call is not
  // blamed for this one; sticky errors cannot be cleared and stay reported by later calls.
  (void)cudaGetLastError();
  int device = current_device_or_unknown();
  if (code == cudaErrorMemoryAllocation) {
    const std::size_t free_bytes = free_device_bytes(device);
    throw out_of_memory(device, 0, free_bytes,
                        concat(describe_failure(code, call, device, file, line), "; ", free_bytes,
                               " bytes free on the device"));
  }
  throw cuda_error(code, call, device, file, line);
}

void report_cuda_error(cudaError_t code, const char* call, const char* file, int line) noexcept {
  if (code == cudaErrorCudartUnloading) return;
  (void)cudaGetLastError();
  std::fprintf(stderr, "%s\n",
               describe_failure(code, call, current_device_or_unknown(), file, line).c_str());
}

}  // namespace detail
}  // namespace multigpu
