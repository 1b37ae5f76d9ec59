#pragma once
// A move-only owner of a CUDA event on one device. Events order work across streams and
// devices: record on the producer's stream, cudaStreamWaitEvent on the consumer's. An
// event must be recorded on a stream of its own device; it may be waited on from any.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/observer.hpp>
#include <multigpu/core/unique_handle.hpp>

#include <utility>

namespace multigpu {

class event {
 public:
  /// Without timing by default: such events are cheaper to record and to wait on.
  explicit event(int device, unsigned flags = cudaEventDisableTiming) {
    device_guard guard(device);
    cudaEvent_t handle = nullptr;
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&handle, flags));
    handle_ = {handle, destroyer{device}};
  }

  cudaEvent_t get() const noexcept { return handle_.get(); }
  int device() const noexcept { return handle_.deleter().device; }

  void record(cudaStream_t stream) const {
    MULTIGPU_CUDA_TRY(cudaEventRecord(get(), stream));
    detail::observe_record(get(), stream);
  }
  /// Makes `stream` (of any device) wait for the work captured by the last record().
  void order_before(cudaStream_t stream) const {
    MULTIGPU_CUDA_TRY(cudaStreamWaitEvent(stream, get(), 0));
    detail::observe_wait(stream, get());
  }
  void synchronize() const { MULTIGPU_CUDA_TRY(cudaEventSynchronize(get())); }
  bool ready() const {
    cudaError_t status = cudaEventQuery(get());
    if (status == cudaErrorNotReady) return false;
    MULTIGPU_CUDA_TRY(status);
    return true;
  }
  /// Milliseconds between two timing events (both created without cudaEventDisableTiming).
  static float elapsed_ms(const event& start, const event& stop) {
    float ms = 0;
    MULTIGPU_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms;
  }

 private:
  struct destroyer {
    int device = 0;
    void operator()(cudaEvent_t e) const noexcept { MULTIGPU_CUDA_REPORT(cudaEventDestroy(e)); }
  };
  unique_handle<cudaEvent_t, destroyer> handle_;
};

}  // namespace multigpu
