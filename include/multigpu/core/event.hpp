#pragma once
// A move-only owner of a CUDA event on one device. Events order work across streams and
// devices: record on the producer's stream, cudaStreamWaitEvent on the consumer's. An
// event must be recorded on a stream of its own device; it may be waited on from any.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/schedule.hpp>

#include <utility>

namespace multigpu {

class event {
 public:
  /// Without timing by default: such events are cheaper to record and to wait on.
  explicit event(int device, unsigned flags = cudaEventDisableTiming) : device_(device) {
    device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&handle_, flags));
  }
  ~event() { reset(); }
  event(event&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  event& operator=(event&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  event(const event&) = delete;
  event& operator=(const event&) = delete;

  cudaEvent_t get() const noexcept { return handle_; }
  int device() const noexcept { return device_; }

  void record(cudaStream_t stream) const {
    MULTIGPU_CUDA_TRY(cudaEventRecord(handle_, stream));
    detail::schedule_note_record(handle_, stream);
  }
  /// Makes `stream` (of any device) wait for the work captured by the last record().
  void order_before(cudaStream_t stream) const {
    MULTIGPU_CUDA_TRY(cudaStreamWaitEvent(stream, handle_, 0));
    detail::schedule_note_wait(stream, handle_);
  }
  void synchronize() const { MULTIGPU_CUDA_TRY(cudaEventSynchronize(handle_)); }
  bool ready() const {
    cudaError_t status = cudaEventQuery(handle_);
    if (status == cudaErrorNotReady) return false;
    MULTIGPU_CUDA_TRY(status);
    return true;
  }
  /// Milliseconds between two timing events (both created without cudaEventDisableTiming).
  static float elapsed_ms(const event& start, const event& stop) {
    float ms = 0;
    MULTIGPU_CUDA_TRY(cudaEventElapsedTime(&ms, start.handle_, stop.handle_));
    return ms;
  }

 private:
  void reset() noexcept {
    if (handle_) MULTIGPU_CUDA_REPORT(cudaEventDestroy(handle_));
    handle_ = nullptr;
  }

  int device_ = 0;
  cudaEvent_t handle_ = nullptr;
};

}  // namespace multigpu
