#pragma once
// Page-locked host memory. DMA engines read and write it directly, so copies from it run
// at full link speed and cudaMemcpyAsync on it is truly asynchronous (pageable memory would
// be copied through a driver buffer first). Allocated portable (usable with every device)
// and, on request, mapped: kernels on any device then read and write it in place (zero-copy),
// which suits small results such as per-device partial sums.

#include <multigpu/core/error.hpp>

#include <cstddef>
#include <utility>

namespace multigpu {

class pinned_buffer {
 public:
  enum class mapping { none, mapped };

  pinned_buffer() = default;
  explicit pinned_buffer(std::size_t bytes, mapping map = mapping::mapped);
  ~pinned_buffer() { reset(); }
  pinned_buffer(pinned_buffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  /// Under unified virtual addressing the host pointer is also the device pointer of a
  /// mapped buffer, on every device.
  void* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void reset() noexcept;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

/// True if [pointer, pointer + bytes) is page-locked host memory (allocated or registered
/// with CUDA), which DMA can use directly.
bool is_pinned(const void* pointer, std::size_t bytes);

}  // namespace multigpu
