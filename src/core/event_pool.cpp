#include <multigpu/core/event_pool.hpp>

#include <multigpu/core/device_guard.hpp>

namespace multigpu {

bool event_pool::handle::ready() const {
  cudaError_t status = cudaEventQuery(get());
  if (status == cudaErrorNotReady) return false;
  MULTIGPU_CUDA_TRY(status);
  return true;
}

event_pool::~event_pool() {
  for (auto& [device, events] : free_)
    for (cudaEvent_t e : events) MULTIGPU_CUDA_REPORT(cudaEventDestroy(e));
}

event_pool::handle event_pool::acquire(int device) {
  {
    std::lock_guard lock(mutex_);
    auto& events = free_[device];
    if (!events.empty()) {
      cudaEvent_t e = events.back();
      events.pop_back();
      return handle(this, device, e);
    }
  }
  device_guard guard(device);
  cudaEvent_t e = nullptr;
  MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return handle(this, device, e);
}

void event_pool::give_back(int device, cudaEvent_t event) noexcept {
  try {
    std::lock_guard lock(mutex_);
    free_[device].push_back(event);
  } catch (...) {
    MULTIGPU_CUDA_REPORT(cudaEventDestroy(event));
  }
}

}  // namespace multigpu
