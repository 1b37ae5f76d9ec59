#pragma once
// A move-only owner of a non-blocking CUDA stream on one device. Non-blocking because
// the legacy default stream would otherwise serialise every slot's work. stream::borrow
// wraps a stream someone else owns: it is used, never destroyed.

#include <multigpu/core/device_guard.hpp>

#include <utility>

namespace multigpu {

class stream {
 public:
  explicit stream(int device) : device_(device) {
    device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&handle_, cudaStreamNonBlocking));
  }
  /// A stream of `device` that its owner keeps alive and destroys; this object only uses it.
  static stream borrow(int device, cudaStream_t handle) noexcept { return stream(device, handle, false); }
  ~stream() { reset(); }
  stream(stream&& other) noexcept
      : device_(other.device_), handle_(std::exchange(other.handle_, nullptr)), owned_(other.owned_) {}
  stream& operator=(stream&& other) noexcept {
    if (this != &other) {
      reset();
      device_ = other.device_;
      handle_ = std::exchange(other.handle_, nullptr);
      owned_ = other.owned_;
    }
    return *this;
  }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;

  cudaStream_t get() const noexcept { return handle_; }
  int device() const noexcept { return device_; }
  /// False for a borrowed stream.
  bool owned() const noexcept { return owned_; }
  void synchronize() const { MULTIGPU_CUDA_TRY(cudaStreamSynchronize(handle_)); }

 private:
  stream(int device, cudaStream_t handle, bool owned) noexcept
      : device_(device), handle_(handle), owned_(owned) {}

  void reset() noexcept {
    if (!handle_ || !owned_) {
      handle_ = nullptr;
      return;
    }
    int previous = 0;
    if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device_) == cudaSuccess) {
      MULTIGPU_CUDA_REPORT(cudaStreamDestroy(handle_));
      MULTIGPU_CUDA_REPORT(cudaSetDevice(previous));
    }
    handle_ = nullptr;
  }

  int device_ = 0;
  cudaStream_t handle_ = nullptr;
  bool owned_ = true;
};

}  // namespace multigpu
