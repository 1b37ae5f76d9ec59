#include <multigpu/memory/device_pool.hpp>

#include <multigpu/core/capture.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/fault_injection.hpp>

#include <algorithm>
#include <mutex>
#include <vector>

namespace multigpu {
namespace {

// Every live pool of the process, so that an allocation that fails can first ask the
// other pools on its device to give back memory they keep for reuse.
struct pool_registry {
  std::mutex mutex;
  std::vector<device_pool*> pools;

  // Never destroyed: a pool in static storage (a group or vector at namespace scope) is
  // destroyed at exit after any function-local static made during main, and still removes
  // itself from here.
  static pool_registry& instance() {
    static pool_registry* const registry = new pool_registry;
    return *registry;
  }
  void add(device_pool* p) {
    std::lock_guard lock(mutex);
    pools.push_back(p);
  }
  void remove(device_pool* p) {
    std::lock_guard lock(mutex);
    pools.erase(std::remove(pools.begin(), pools.end(), p), pools.end());
  }
  void trim_device(int device) {
    std::lock_guard lock(mutex);
    for (device_pool* p : pools)
      if (p->device() == device) p->trim(0);
  }
};

std::uint64_t read_attribute(cudaMemPool_t pool, cudaMemPoolAttr attribute) {
  std::uint64_t value = 0;
  MULTIGPU_CUDA_TRY(cudaMemPoolGetAttribute(pool, attribute, &value));
  return value;
}

}  // namespace

device_pool::device_pool(int device) : device_(device) {
  device_guard guard(device);
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  MULTIGPU_CUDA_TRY(cudaMemPoolCreate(&pool_, &props));
  // Keep freed memory for reuse: without this the pool returns it to the driver at each
  // synchronisation and the next allocation pays for a fresh mapping.
  std::uint64_t threshold = std::numeric_limits<std::uint64_t>::max();
  cudaError_t status = cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &threshold);
  if (status != cudaSuccess) {
    MULTIGPU_CUDA_REPORT(cudaMemPoolDestroy(pool_));
    MULTIGPU_CUDA_TRY(status);
  }
  pool_registry::instance().add(this);
}

device_pool::~device_pool() {
  pool_registry::instance().remove(this);
  // Memory still pending release on a stream is returned once that stream gets there;
  // cudaMemPoolDestroy defers the pool's own release until then.
  MULTIGPU_CUDA_REPORT(cudaMemPoolDestroy(pool_));
}

void* device_pool::allocate(std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  detail::refuse_during_capture(true);
#ifdef MULTIGPU_FAULT_INJECTION
  if (testing::fault_due(testing::fault_site::pool_allocation))
    throw out_of_memory(device_, bytes, 0,
                        detail::concat("multigpu: injected fault: pool allocation of ", bytes,
                                       " bytes on device ", device_, " failed on purpose"));
#endif
  void* pointer = nullptr;
  cudaError_t status = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream);
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    pool_registry::instance().trim_device(device_);
    status = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream);
  }
  if (status == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    const std::size_t free_bytes = detail::free_device_bytes(device_);
    throw out_of_memory(device_, bytes, free_bytes,
                        detail::concat("multigpu: out of memory on device ", device_, ": asked for ",
                                       bytes, " bytes, ", free_bytes, " bytes free on the device"));
  }
  MULTIGPU_CUDA_TRY(status);
  return pointer;
}

void device_pool::deallocate(void* pointer, cudaStream_t stream) noexcept {
  if (pointer) MULTIGPU_CUDA_REPORT(cudaFreeAsync(pointer, stream));
}

pool_usage device_pool::usage() const {
  pool_usage u;
  u.used_bytes = read_attribute(pool_, cudaMemPoolAttrUsedMemCurrent);
  u.peak_used_bytes = read_attribute(pool_, cudaMemPoolAttrUsedMemHigh);
  u.reserved_bytes = read_attribute(pool_, cudaMemPoolAttrReservedMemCurrent);
  u.peak_reserved_bytes = read_attribute(pool_, cudaMemPoolAttrReservedMemHigh);
  return u;
}

void device_pool::reset_peak() {
  std::uint64_t zero = 0;
  MULTIGPU_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero));
  MULTIGPU_CUDA_TRY(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReservedMemHigh, &zero));
}

void device_pool::grant_access(int peer_device) {
  if (peer_device == device_) return;
  std::lock_guard lock(access_mutex_);
  if (std::find(granted_.begin(), granted_.end(), peer_device) != granted_.end()) return;
  granted_.reserve(granted_.size() + 1);
  cudaMemAccessDesc desc{};
  desc.location.type = cudaMemLocationTypeDevice;
  desc.location.id = peer_device;
  desc.flags = cudaMemAccessFlagsProtReadWrite;
  MULTIGPU_CUDA_TRY(cudaMemPoolSetAccess(pool_, &desc, 1));
  granted_.push_back(peer_device);
}

void device_pool::trim(std::size_t keep_bytes) {
  MULTIGPU_CUDA_REPORT(cudaMemPoolTrimTo(pool_, keep_bytes));
}

}  // namespace multigpu
