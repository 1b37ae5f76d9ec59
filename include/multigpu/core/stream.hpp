#pragma once
// A move-only owner of a non-blocking CUDA stream on one device. Non-blocking because
// the legacy default stream would otherwise serialise every slot's work. stream::borrow
// wraps a stream someone else owns: it is used, never destroyed.

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/unique_handle.hpp>

#include <utility>

namespace multigpu {

class stream {
 public:
  explicit stream(int device) {
    device_guard guard(device);
    cudaStream_t handle = nullptr;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&handle, cudaStreamNonBlocking));
    handle_ = {handle, destroyer{device, true}};
  }
  /// A stream of `device` that its owner keeps alive and destroys; this object only uses it.
  static stream borrow(int device, cudaStream_t handle) noexcept { return stream(device, handle, false); }

  cudaStream_t get() const noexcept { return handle_.get(); }
  int device() const noexcept { return handle_.deleter().device; }
  /// False for a borrowed stream.
  bool owned() const noexcept { return handle_.deleter().owned; }
  void synchronize() const { MULTIGPU_CUDA_TRY(cudaStreamSynchronize(get())); }

 private:
  struct destroyer {
    int device = 0;
    bool owned = true;
    void operator()(cudaStream_t s) const noexcept {
      if (!owned) return;
      int previous = 0;
      if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess) {
        MULTIGPU_CUDA_REPORT(cudaStreamDestroy(s));
        MULTIGPU_CUDA_REPORT(cudaSetDevice(previous));
      }
    }
  };
  stream(int device, cudaStream_t handle, bool owned) noexcept : handle_(handle, destroyer{device, owned}) {}

  unique_handle<cudaStream_t, destroyer> handle_;
};

}  // namespace multigpu
