#pragma once
// Stream-ordered device memory: one cudaMemPool_t per device of a group. Allocation and
// release are enqueued on a stream (cudaMallocFromPoolAsync / cudaFreeAsync), and the release
// threshold is set so the pool keeps freed memory for reuse instead of returning it to the
// driver at every synchronisation: repeated operations then allocate at almost no cost.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>
#include <multigpu/core/unique_handle.hpp>
#include <multigpu/memory/resource_ref.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

namespace multigpu {

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

 private:
  int device_;
  cudaMemPool_t pool_ = nullptr;
  std::mutex access_mutex_;
  std::vector<int> granted_;  // devices given access by grant_access
};

/// Selects device_buffer's managed-memory constructor.
struct managed_memory_t {
  explicit managed_memory_t() = default;
};
inline constexpr managed_memory_t managed_memory{};

/// An owning, typed, stream-ordered device allocation. Move-only; released on its stream
/// when destroyed, so destroying it while work on it is in flight is safe. Three forms:
/// - pool: from a device_pool (the default for vector segments and all scratch);
/// - resource: from a user's memory resource (group_options::resources), allocated with
///   allocate_async and returned with deallocate_async on the buffer's stream;
/// - managed: cudaMallocManaged memory (see storage::managed).
template <class T>
class device_buffer {
 public:
  /// The alignment asked of a memory resource: as the pools give, and at least T's.
  static constexpr std::size_t resource_alignment = alignof(T) > 256 ? alignof(T) : 256;

  device_buffer() = default;
  /// `count` elements of managed memory whose preferred location is `device`, prefetched
  /// there on `stream`. Host code may read and write it directly once `stream` is idle.
  /// Released (after waiting for `stream`) with cudaFree.
  device_buffer(std::size_t count, managed_memory_t, int device, cudaStream_t stream)
      : memory_(nullptr, releaser{nullptr, {}, stream, count, device}) {
    const std::size_t bytes = bytes_for(count);
    if (count == 0) return;
    device_guard guard(device);  // restores the caller's device on every path
    void* pointer = nullptr;
    const cudaError_t status = cudaMallocManaged(&pointer, bytes, cudaMemAttachGlobal);
    if (status == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();
      const std::size_t free_bytes = detail::free_device_bytes(device);
      throw out_of_memory(device, bytes, free_bytes,
                          detail::concat("device_buffer: cudaMallocManaged of ", bytes, " bytes for device ",
                                         device, " failed: out of memory (", free_bytes, " bytes free)"));
    }
    MULTIGPU_CUDA_TRY(status);
    // Owned from here: an error below releases it through the releaser.
    memory_ = {static_cast<T*>(pointer), releaser{nullptr, {}, stream, count, device}};
    cudaMemLocation location{};
    location.type = cudaMemLocationTypeDevice;
    location.id = device;
    MULTIGPU_CUDA_TRY(cudaMemAdvise(pointer, bytes, cudaMemAdviseSetPreferredLocation, location));
    MULTIGPU_CUDA_TRY(cudaMemPrefetchAsync(pointer, bytes, location, 0, stream));
  }
  /// `count` elements from `pool`, enqueued on `stream` (a stream of the pool's device).
  device_buffer(std::size_t count, device_pool& pool, cudaStream_t stream)
      : memory_(static_cast<T*>(pool.allocate(bytes_for(count), stream)),
                releaser{&pool, {}, stream, count, pool.device()}) {}
  /// `count` elements from `resource` (which allocates on `device`), enqueued on `stream`
  /// with `device` current. Zero elements asks the resource for nothing. A resource that
  /// gives nullptr for a request throws multigpu::out_of_memory; one that throws lets its
  /// exception through. The resource must outlive the buffer.
  device_buffer(std::size_t count, device_resource_ref resource, int device, cudaStream_t stream)
      : memory_(nullptr, releaser{nullptr, resource, stream, count, device}) {
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
    memory_ = {static_cast<T*>(pointer), releaser{nullptr, resource, stream, count, device}};
  }
  T* data() const noexcept { return memory_.get(); }
  std::size_t size() const noexcept { return memory_ ? memory_.deleter().count : 0; }
  std::size_t size_bytes() const noexcept { return size() * sizeof(T); }
  cudaStream_t stream() const noexcept { return memory_.deleter().stream; }
  /// The pool of the pool form; nullptr for the other forms.
  device_pool* pool() const noexcept { return memory_.deleter().pool; }
  /// True for the managed form (host code may dereference data() once stream() is idle).
  bool managed() const noexcept { return memory_.deleter().is_managed(); }
  /// True for the resource form.
  bool from_resource() const noexcept { return memory_.deleter().resource.has_value(); }

  /// Gives the memory back now, in stream order for pool and resource memory.
  void release() noexcept { memory_.reset(); }

 private:
  static std::size_t bytes_for(std::size_t count) {
    MULTIGPU_EXPECTS(count <= std::numeric_limits<std::size_t>::max() / sizeof(T),
                     detail::concat("device_buffer: ", count, " elements of ", sizeof(T),
                                    " bytes overflow the size type"));
    return count * sizeof(T);
  }
  /// Which form the buffer has follows from what it holds: a pool, a resource, or neither but
  /// a device (managed memory); a default-constructed buffer has none of them.
  struct releaser {
    device_pool* pool = nullptr;                           ///< pool form
    mutable std::optional<device_resource_ref> resource;  ///< resource form (its calls are not const)
    cudaStream_t stream = nullptr;
    std::size_t count = 0;
    int device = -1;
    bool is_managed() const noexcept { return pool == nullptr && !resource.has_value() && device >= 0; }
    void operator()(T* p) const noexcept {
      if (pool != nullptr) {
        pool->deallocate(p, stream);
        return;
      }
      // The other forms release with the buffer's device current, as they allocated.
      const detail::quiet_device_guard guard(device);
      if (!guard.ok()) return;
      if (resource.has_value()) {
        try {
          resource->deallocate_async(p, count * sizeof(T), resource_alignment, cuda::stream_ref(stream));
        } catch (const std::exception& e) {  // noexcept here: report, as for CUDA errors
          std::fprintf(stderr, "multigpu: the memory resource of device %d threw from deallocate_async: %s\n",
                       device, e.what());
        } catch (...) {
          std::fprintf(stderr, "multigpu: the memory resource of device %d threw from deallocate_async\n", device);
        }
      } else {
        // cudaFree is not stream ordered: wait for the work enqueued on the buffer first.
        MULTIGPU_CUDA_REPORT(cudaStreamSynchronize(stream));
        MULTIGPU_CUDA_REPORT(cudaFree(p));
      }
    }
  };
  unique_handle<T*, releaser> memory_;
};

}  // namespace multigpu
