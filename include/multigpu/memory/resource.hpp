#pragma once
// A device_pool as a CCCL memory resource: pool_resource models cuda::mr::async_resource with
// the cuda::mr::device_accessible property (CCCL 3.0), so that code written against
// cuda::mr::async_resource_ref<cuda::mr::device_accessible> (CCCL containers, RMM-style
// adaptors, your own) can allocate from a group's pools:
//
//   #include <multigpu/memory/resource.hpp>
//   multigpu::pool_resource pool(group.pool(slot));
//   cuda::mr::async_resource_ref<cuda::mr::device_accessible> ref{pool};
//   void* p = ref.allocate_async(bytes, 256, group.stream(slot));
//
// cuda::mr is experimental in CCCL 3.0: the multigpu::multigpu CMake target defines the
// opt-in macro LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE for its users (see
// resource_ref.hpp). The resource refers to the pool; it must not outlive the group. A
// pool_resource (or a resource wrapping one) may also be given to group_options::resources.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>

namespace multigpu {

class pool_resource {
 public:
  /// Pool allocations are aligned to at least this many bytes.
  static constexpr std::size_t max_alignment = 256;

  explicit pool_resource(device_pool& pool) noexcept : pool_(&pool) {}

  /// Stream ordered: the memory may be used by work ordered after `stream`.
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    check_alignment(alignment);
    return pool_->allocate(bytes, stream.get());
  }
  void deallocate_async(void* pointer, std::size_t, std::size_t, cuda::stream_ref stream) noexcept {
    pool_->deallocate(pointer, stream.get());
  }

  /// Synchronous forms: the allocation (or release) is complete when they return.
  void* allocate(std::size_t bytes, std::size_t alignment) {
    check_alignment(alignment);
    device_guard guard(pool_->device());
    void* pointer = pool_->allocate(bytes, cudaStreamLegacy);
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(cudaStreamLegacy));
    return pointer;
  }
  void deallocate(void* pointer, std::size_t, std::size_t) noexcept {
    device_guard guard(pool_->device());
    pool_->deallocate(pointer, cudaStreamLegacy);
    MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(cudaStreamLegacy));
  }

  device_pool& pool() const noexcept { return *pool_; }
  int device() const noexcept { return pool_->device(); }

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

static_assert(cuda::mr::async_resource_with<pool_resource, cuda::mr::device_accessible>);

}  // namespace multigpu
