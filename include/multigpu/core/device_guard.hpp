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

}  // namespace multigpu
