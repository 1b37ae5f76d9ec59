#pragma once
// An owning, typed, stream-ordered device allocation from one memory resource, as RMM's
// device_uvector: a group's pool (the default for vector segments and all scratch), a user's
// resource (group_options::resources) or managed memory (storage::managed) are all resources.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/unique_handle.hpp>
#include <multigpu/memory/device_pool.hpp>
#include <multigpu/memory/resource_ref.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdio>
#include <exception>
#include <limits>
#include <optional>

namespace multigpu {

/// cudaMallocManaged memory as a memory resource (storage::managed). An allocation's preferred
/// location is the device current when it is made, and it is prefetched there on the stream;
/// host code may read and write it directly once that stream is idle. cudaFree is not stream
/// ordered: a release first waits for the stream. Stateless: use managed_resource::instance().
class managed_resource {
 public:
  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream);
  void deallocate_async(void* pointer, std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) noexcept;
  void* allocate(std::size_t bytes, std::size_t alignment);
  void deallocate(void* pointer, std::size_t bytes, std::size_t alignment) noexcept;

  /// The process's one instance (it holds no state, and is never destroyed).
  static managed_resource& instance() noexcept;

  friend bool operator==(const managed_resource&, const managed_resource&) noexcept { return true; }
  friend bool operator!=(const managed_resource&, const managed_resource&) noexcept { return false; }
  friend constexpr void get_property(const managed_resource&, cuda::mr::device_accessible) noexcept {}
  friend constexpr void get_property(const managed_resource&, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::async_resource_with<managed_resource, cuda::mr::device_accessible>);

/// `count` elements of T from a memory resource, allocated on a stream with the resource's
/// device current, and released on that stream when destroyed: destroying it while work on it
/// is in flight is safe. Move-only.
template <class T>
class device_buffer {
 public:
  /// The alignment asked of a memory resource: as the pools give, and at least T's.
  static constexpr std::size_t resource_alignment = alignof(T) > 256 ? alignof(T) : 256;

  device_buffer() = default;
  /// `count` elements from `resource` (which allocates on `device`), enqueued on `stream`
  /// with `device` current. Zero elements asks the resource for nothing. A resource that
  /// gives nullptr for a request throws multigpu::out_of_memory; one that throws lets its
  /// exception through. The resource must outlive the buffer.
  device_buffer(std::size_t count, device_resource_ref resource, int device, cudaStream_t stream)
      : memory_(nullptr, releaser{resource, stream, count, device}) {
    const std::size_t bytes = bytes_for(count);
    if (count == 0) return;
    void* pointer = nullptr;
    {
      device_guard guard(device);
      pointer = resource.allocate_async(bytes, resource_alignment, cuda::stream_ref(stream));
    }
    if (pointer == nullptr) {
      const std::size_t free_bytes = detail::free_device_bytes(device);
      throw out_of_memory(device, bytes, free_bytes,
                          detail::concat("device_buffer: the memory resource of device ", device,
                                         " returned no memory for ", bytes, " bytes (", free_bytes,
                                         " bytes free on the device)"));
    }
    memory_ = {static_cast<T*>(pointer), releaser{resource, stream, count, device}};
  }
  /// `count` elements from `pool`, enqueued on `stream` (a stream of the pool's device).
  device_buffer(std::size_t count, device_pool& pool, cudaStream_t stream)
      : device_buffer(count, device_resource_ref{pool.resource()}, pool.device(), stream) {}

  T* data() const noexcept { return memory_.get(); }
  std::size_t size() const noexcept { return memory_ ? memory_.deleter().count : 0; }
  std::size_t size_bytes() const noexcept { return size() * sizeof(T); }
  cudaStream_t stream() const noexcept { return memory_.deleter().stream; }

  /// Gives the memory back now, in stream order.
  void release() noexcept { memory_.reset(); }

 private:
  static std::size_t bytes_for(std::size_t count) {
    MULTIGPU_EXPECTS(count <= std::numeric_limits<std::size_t>::max() / sizeof(T),
                     detail::concat("device_buffer: ", count, " elements of ", sizeof(T),
                                    " bytes overflow the size type"));
    return count * sizeof(T);
  }
  struct releaser {
    mutable std::optional<device_resource_ref> resource;  // none in a default-constructed buffer
    cudaStream_t stream = nullptr;
    std::size_t count = 0;
    int device = -1;
    void operator()(T* p) const noexcept {
      if (!resource.has_value()) return;
      // Released with the buffer's device current, as it was allocated.
      const detail::quiet_device_guard guard(device);
      if (!guard.ok()) return;
      try {
        resource->deallocate_async(p, count * sizeof(T), resource_alignment, cuda::stream_ref(stream));
      } catch (const std::exception& e) {  // noexcept here: report, as for CUDA errors
        std::fprintf(stderr, "multigpu: the memory resource of device %d threw from deallocate_async: %s\n",
                     device, e.what());
      } catch (...) {
        std::fprintf(stderr, "multigpu: the memory resource of device %d threw from deallocate_async\n", device);
      }
    }
  };
  unique_handle<T*, releaser> memory_;
};

}  // namespace multigpu
