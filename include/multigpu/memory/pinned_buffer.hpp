#pragma once
// Page-locked host memory. DMA engines read and write it directly, so copies from it run
// at full link speed and cudaMemcpyAsync on it is truly asynchronous (pageable memory would
// be copied through a driver buffer first). Allocated portable (usable with every device)
// and, on request, mapped: kernels on any device then read and write it in place (zero-copy),
// which suits small results such as per-device partial sums.

#include <multigpu/core/error.hpp>
#include <multigpu/core/unique_handle.hpp>

#include <cstddef>
#include <utility>

namespace multigpu {

class pinned_buffer {
 public:
  enum class mapping { none, mapped };

  pinned_buffer() = default;
  explicit pinned_buffer(std::size_t bytes, mapping map = mapping::mapped);

  /// Under unified virtual addressing the host pointer is also the device pointer of a
  /// mapped buffer, on every device.
  void* data() const noexcept { return memory_.get(); }
  std::size_t size() const noexcept { return memory_ ? memory_.deleter().bytes : 0; }

 private:
  struct free_host {
    std::size_t bytes = 0;
    void operator()(void* p) const noexcept { MULTIGPU_CUDA_REPORT(cudaFreeHost(p)); }
  };
  unique_handle<void*, free_host> memory_;
};

/// True if [pointer, pointer + bytes) is page-locked host memory (allocated or registered
/// with CUDA), which DMA can use directly.
bool is_pinned(const void* pointer, std::size_t bytes);

}  // namespace multigpu
