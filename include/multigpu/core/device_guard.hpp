#pragma once
// RAII save/set/restore of the current device. The current device is per host thread
// (a new std::thread starts on device 0), so every piece of code that works on a device
// sets it for its own extent and restores the caller's choice afterwards.

#include <multigpu/core/error.hpp>

namespace multigpu {

class device_guard {
 public:
  explicit device_guard(int device) {
    MULTIGPU_CUDA_TRY(cudaGetDevice(&previous_));
    if (device != previous_) MULTIGPU_CUDA_TRY(cudaSetDevice(device));
    current_ = device;
  }
  ~device_guard() {
    if (current_ != previous_) MULTIGPU_CUDA_REPORT(cudaSetDevice(previous_));
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

  /// Switches to another device; the destructor still restores the original one.
  void set(int device) {
    if (device != current_) MULTIGPU_CUDA_TRY(cudaSetDevice(device));
    current_ = device;
  }

 private:
  int previous_ = 0;
  int current_ = 0;
};

namespace detail {

/// The noexcept form, for destructors and error paths: switches to `device` if it can (ok()
/// says whether), and restores the caller's device on destruction, reporting a failure there
/// instead of throwing.
class quiet_device_guard {
 public:
  explicit quiet_device_guard(int device) noexcept {
    ok_ = device >= 0 && cudaGetDevice(&previous_) == cudaSuccess &&
          (device == previous_ || cudaSetDevice(device) == cudaSuccess);
    if (!ok_) (void)cudaGetLastError();
    switched_ = ok_ && device != previous_;
  }
  ~quiet_device_guard() {
    if (switched_) MULTIGPU_CUDA_REPORT(cudaSetDevice(previous_));
  }
  quiet_device_guard(const quiet_device_guard&) = delete;
  quiet_device_guard& operator=(const quiet_device_guard&) = delete;

  bool ok() const noexcept { return ok_; }

 private:
  int previous_ = 0;
  bool ok_ = false;
  bool switched_ = false;
};

}  // namespace detail

}  // namespace multigpu
