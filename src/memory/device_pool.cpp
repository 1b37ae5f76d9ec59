#include <multigpu/memory/device_pool.hpp>

#include <multigpu/core/capture.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/observer.hpp>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace multigpu {
namespace {

// Every live pool of the process, so that an allocation that fails can first ask the
// other pools on its device to give back memory they keep for reuse; and every allocation
// not yet released, so that memory still held at exit is returned before the CUDA runtime
// tears down.
//
// Why the second: a group or vector in static storage (a namespace-scope
// std::optional<distributed_vector>) is destroyed at exit after the runtime's own exit
// handler, which was registered later (at the first CUDA call, during main). Its release then
// fails with cudaErrorCudartUnloading and the memory is never freed: memcheck's leak check
// lists it. The first pool registers release_at_exit() with std::atexit; it runs before the
// runtime's handler (registered earlier, so run later), waits for each device and frees what
// is still allocated. A later deallocate() of such memory does nothing.
struct pool_registry {
  std::mutex mutex;
  std::vector<device_pool*> pools;
  std::unordered_map<void*, int> live;  // allocation -> its device
  bool released_at_exit = false;

  // Never destroyed: a pool in static storage (a group or vector at namespace scope) is
  // destroyed at exit after any function-local static made during main, and still removes
  // itself from here.
  static pool_registry& instance() {
    static pool_registry* const registry = new pool_registry;
    return *registry;
  }
  void add(device_pool* p) {
    static std::once_flag at_exit;
    std::call_once(at_exit, [] { (void)std::atexit(release_at_exit); });
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
  void track(void* pointer, int device) {
    std::lock_guard lock(mutex);
    live.emplace(pointer, device);
  }
  /// False when the memory was already returned at exit: the caller must not free it.
  bool untrack(void* pointer) noexcept {
    std::lock_guard lock(mutex);
    return live.erase(pointer) != 0 || !released_at_exit;
  }

  static void release_at_exit() noexcept {
    pool_registry& r = instance();
    std::lock_guard lock(r.mutex);
    r.released_at_exit = true;
    if (r.live.empty()) return;  // the usual exit: every vector and group is gone already
    // Every device with a pool first, then the frees: a kernel or peer copy on one device may
    // still read another device's memory (a vector's last call was never waited for). A
    // device in an error state is left alone: its memory goes with its context, and there is
    // no one left to tell at exit.
    std::vector<int> devices, idle;
    for (const device_pool* p : r.pools)
      if (std::find(devices.begin(), devices.end(), p->device()) == devices.end()) devices.push_back(p->device());
    for (const auto& [pointer, device] : r.live)
      if (std::find(devices.begin(), devices.end(), device) == devices.end()) devices.push_back(device);
    for (int device : devices) {
      const detail::quiet_device_guard guard(device);
      if (guard.ok() && cudaDeviceSynchronize() == cudaSuccess) idle.push_back(device);
    }
    for (const auto& [pointer, device] : r.live)
      if (std::find(idle.begin(), idle.end(), device) != idle.end()) {
        const detail::quiet_device_guard guard(device);
        if (guard.ok()) (void)cudaFree(pointer);
      }
    (void)cudaGetLastError();
    r.live.clear();
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
  if (detail::fault_due(fault_site::pool_allocation))
    throw out_of_memory(device_, bytes, 0,
                        detail::concat("multigpu: injected fault: pool allocation of ", bytes,
                                       " bytes on device ", device_, " failed on purpose"));
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
  try {
    pool_registry::instance().track(pointer, device_);
  } catch (...) {
    MULTIGPU_CUDA_REPORT(cudaFreeAsync(pointer, stream));
    throw;
  }
  return pointer;
}

void device_pool::deallocate(void* pointer, cudaStream_t stream) noexcept {
  if (pointer && pool_registry::instance().untrack(pointer)) MULTIGPU_CUDA_REPORT(cudaFreeAsync(pointer, stream));
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
