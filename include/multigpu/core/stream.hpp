#pragma once
// A move-only owner of a non-blocking CUDA stream on one device. Non-blocking because
// the legacy default stream would otherwise serialise every slot's work.

#include <multigpu/core/device_guard.hpp>

#include <utility>

namespace multigpu {

class stream {
 public:
  explicit stream(int device) : device_(device) {
    device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  ~stream() { reset(); }
  stream(stream&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  cudaStream_t get() const noexcept { return handle_; }
  int device() const noexcept { return device_; }
  void synchronize() const { MULTIGPU_CUDA_TRY(cudaStreamSynchronize(handle_)); }

 private:
  void reset() noexcept {
    if (!handle_) return;
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess) {
      MULTIGPU_CUDA_REPORT(cudaStreamDestroy(handle_));
      MULTIGPU_CUDA_REPORT(cudaSetDevice(previous));
    }
    handle_ = nullptr;
  }

  int device_ = 0;
  cudaStream_t handle_ = nullptr;
};

}  // namespace multigpu
