#pragma once
// One slot's part of a vector: a cheap, non-owning view. Launch work on stream() with
// device() current and it stays ordered with every other operation on the vector.

#include <cuda/std/span>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace multigpu {

template <class T>
class segment_view {
 public:
  segment_view() = default;
  segment_view(std::size_t slot, int device, cudaStream_t stream, T* data, std::size_t size,
               std::size_t offset, std::size_t halo = 0) noexcept
      : slot_(slot), device_(device), stream_(stream), data_(data), size_(size), offset_(offset), halo_(halo) {}

  std::size_t slot() const noexcept { return slot_; }
  int device() const noexcept { return device_; }
  cudaStream_t stream() const noexcept { return stream_; }
  T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  /// Global index of data()[0].
  std::size_t offset() const noexcept { return offset_; }
  cuda::std::span<T> span() const noexcept { return {data_, size_}; }
  /// Elements of halo on each side: data()[-halo()] .. data()[size() + halo() - 1] are valid
  /// memory (see exchange_halos).
  std::size_t halo() const noexcept { return halo_; }

 private:
  std::size_t slot_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t offset_ = 0;
  std::size_t halo_ = 0;
};

}  // namespace multigpu
