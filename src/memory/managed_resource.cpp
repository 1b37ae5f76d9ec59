#include <multigpu/memory/device_buffer.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>

namespace multigpu {

void* managed_resource::allocate_async(std::size_t bytes, std::size_t, cuda::stream_ref stream) {
  if (bytes == 0) return nullptr;
  int device = 0;
  MULTIGPU_CUDA_TRY(cudaGetDevice(&device));
  void* pointer = nullptr;
  const cudaError_t status = cudaMallocManaged(&pointer, bytes, cudaMemAttachGlobal);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    const std::size_t free_bytes = detail::free_device_bytes(device);
    throw out_of_memory(device, bytes, free_bytes,
                        detail::concat("device_buffer: cudaMallocManaged of ", bytes, " bytes for device ", device,
                                       " failed: out of memory (", free_bytes, " bytes free)"));
  }
  MULTIGPU_CUDA_TRY(status);
  try {
    cudaMemLocation location{};
    location.type = cudaMemLocationTypeDevice;
    location.id = device;
    MULTIGPU_CUDA_TRY(cudaMemAdvise(pointer, bytes, cudaMemAdviseSetPreferredLocation, location));
    MULTIGPU_CUDA_TRY(cudaMemPrefetchAsync(pointer, bytes, location, 0, stream.get()));
  } catch (...) {
    MULTIGPU_CUDA_REPORT(cudaFree(pointer));
    throw;
  }
  return pointer;
}

void managed_resource::deallocate_async(void* pointer, std::size_t, std::size_t, cuda::stream_ref stream) noexcept {
  if (pointer == nullptr) return;
  // cudaFree is not stream ordered: wait for the work enqueued on the memory first.
  MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(stream.get()));
  MULTIGPU_CUDA_REPORT(cudaFree(pointer));
}

void* managed_resource::allocate(std::size_t bytes, std::size_t alignment) {
  void* pointer = allocate_async(bytes, alignment, cuda::stream_ref(cudaStreamLegacy));
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  return pointer;
}

void managed_resource::deallocate(void* pointer, std::size_t bytes, std::size_t alignment) noexcept {
  deallocate_async(pointer, bytes, alignment, cuda::stream_ref(cudaStreamLegacy));
}

managed_resource& managed_resource::instance() noexcept {
  static managed_resource* const resource = new managed_resource;  // never destroyed: see the class
  return *resource;
}

}  // namespace multigpu
