#include <multigpu/memory/pinned_buffer.hpp>

namespace multigpu {

pinned_buffer::pinned_buffer(std::size_t bytes, mapping map) {
  if (bytes == 0) return;
  unsigned flags = cudaHostAllocPortable | (map == mapping::mapped ? cudaHostAllocMapped : 0u);
  void* data = nullptr;
  cudaError_t status = cudaHostAlloc(&data, bytes, flags);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw out_of_memory(-1, bytes, 0,
                        detail::concat("multigpu: could not pin ", bytes,
                                       " bytes of host memory (cudaHostAlloc)"));
  }
  MULTIGPU_CUDA_TRY(status);
  memory_ = {data, free_host{bytes}};
}

bool is_pinned(const void* pointer, std::size_t bytes) {
  if (!pointer || bytes == 0) return false;
  auto pinned_at = [](const void* p) {
    cudaPointerAttributes attributes{};
    cudaError_t status = cudaPointerGetAttributes(&attributes, p);
    if (status == cudaErrorInvalidValue) {  // older drivers: plain host memory
      (void)cudaGetLastError();
      return false;
    }
    MULTIGPU_CUDA_TRY(status);
    return attributes.type == cudaMemoryTypeHost;
  };
  return pinned_at(pointer) && pinned_at(static_cast<const char*>(pointer) + bytes - 1);
}

}  // namespace multigpu
