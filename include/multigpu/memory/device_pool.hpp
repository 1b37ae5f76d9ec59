#pragma once
// Stream-ordered device memory: one cudaMemPool_t per device of a group. Allocation and
// release are enqueued on a stream (cudaMallocFromPoolAsync / cudaFreeAsync), and the release
// threshold is set so the pool keeps freed memory for reuse instead of returning it to the
// driver at every synchronisation: repeated operations then allocate at almost no cost.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/memory/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace multigpu {

class device_pool;

/// A device_pool as a CCCL memory resource: pool_resource models cuda::mr::async_resource with
/// the cuda::mr::device_accessible property (CCCL 3.0), so that code written against
/// cuda::mr::async_resource_ref<cuda::mr::device_accessible> (CCCL containers, RMM-style
/// adaptors, device_buffer, your own) can allocate from a group's pools (see resource.hpp).
/// It refers to the pool and must not outlive it; every pool holds one (device_pool::resource).
class pool_resource {
 public:
  /// Pool allocations are aligned to at least this many bytes.
  static constexpr std::size_t max_alignment = 256;

  explicit pool_resource(device_pool& pool) noexcept : pool_(&pool) {}

  /// Stream ordered: the memory may be used by work ordered after `stream`.
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream);
  void deallocate_async(void* pointer, std::size_t, std::size_t, cuda::stream_ref stream) noexcept;
  /// Synchronous forms: the allocation (or release) is complete when they return.
  void* allocate(std::size_t bytes, std::size_t alignment);
  void deallocate(void* pointer, std::size_t, std::size_t) noexcept;

  device_pool& pool() const noexcept { return *pool_; }
  int device() const noexcept;

  friend bool operator==(const pool_resource& a, const pool_resource& b) noexcept { return a.pool_ == b.pool_; }
  friend bool operator!=(const pool_resource& a, const pool_resource& b) noexcept { return a.pool_ != b.pool_; }
  /// Pool memory is device memory.
  friend constexpr void get_property(const pool_resource&, cuda::mr::device_accessible) noexcept {}

 private:
  static void check_alignment(std::size_t alignment) {
    MULTIGPU_EXPECTS(alignment != 0 && (alignment & (alignment - 1)) == 0 && alignment <= max_alignment,
                     detail::concat("pool_resource: alignment ", alignment,
                                    " must be a power of two no larger than ", max_alignment));
  }

  device_pool* pool_;
};

/// Bytes in use and held by a pool; "peak" values are high-water marks since creation or
/// the last reset_peak().
struct pool_usage {
  std::size_t used_bytes = 0;
  std::size_t peak_used_bytes = 0;
  std::size_t reserved_bytes = 0;
  std::size_t peak_reserved_bytes = 0;
};

class device_pool {
 public:
  explicit device_pool(int device);
  ~device_pool();
  device_pool(const device_pool&) = delete;
  device_pool& operator=(const device_pool&) = delete;

  int device() const noexcept { return device_; }
  cudaMemPool_t native_handle() const noexcept { return pool_; }

  /// Enqueues an allocation on `stream` (a stream of this pool's device). Zero bytes gives
  /// nullptr. Throws multigpu::out_of_memory naming the device, the request and the free
  /// bytes; the pool stays usable.
  void* allocate(std::size_t bytes, cudaStream_t stream);
  /// Enqueues the release on `stream`: the memory is reused by work ordered after it.
  void deallocate(void* pointer, cudaStream_t stream) noexcept;

  pool_usage usage() const;
  void reset_peak();
  /// Lets kernels and copies on `peer_device` read and write this pool's allocations
  /// (peer access alone does not cover pool memory). Thread-safe; a device already granted
  /// costs no driver call.
  void grant_access(int peer_device);
  /// Returns unused reserved memory to the driver, keeping at least `keep_bytes`.
  void trim(std::size_t keep_bytes = 0);
  /// The pool as a memory resource (device_buffer allocates through it).
  pool_resource& resource() noexcept { return resource_; }

 private:
  int device_;
  pool_resource resource_{*this};
  cudaMemPool_t pool_ = nullptr;
  std::mutex access_mutex_;
  std::vector<int> granted_;  // devices given access by grant_access
};

inline void* pool_resource::allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
  check_alignment(alignment);
  return pool_->allocate(bytes, stream.get());
}
inline void pool_resource::deallocate_async(void* pointer, std::size_t, std::size_t,
                                            cuda::stream_ref stream) noexcept {
  pool_->deallocate(pointer, stream.get());
}
inline void* pool_resource::allocate(std::size_t bytes, std::size_t alignment) {
  check_alignment(alignment);
  device_guard guard(pool_->device());
  void* pointer = pool_->allocate(bytes, cudaStreamLegacy);
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
  return pointer;
}
inline void pool_resource::deallocate(void* pointer, std::size_t, std::size_t) noexcept {
  device_guard guard(pool_->device());
  pool_->deallocate(pointer, cudaStreamLegacy);
  MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(cudaStreamLegacy));
}
inline int pool_resource::device() const noexcept { return pool_->device(); }

static_assert(cuda::mr::async_resource_with<pool_resource, cuda::mr::device_accessible>);

}  // namespace multigpu
