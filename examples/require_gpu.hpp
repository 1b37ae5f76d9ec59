#pragma once
// What the demo and every example do on a machine without a visible GPU: say why, in the
// words of multigpu-doctor, and exit with 77 (what CTest counts as "skipped").

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace examples {

/// 0 when a CUDA device is visible; otherwise prints why not, prefixed with `program`, and
/// returns 77 for main to return.
inline int require_gpu(const char* program) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return 0;
  (void)cudaGetLastError();
  int runtime = 0;
  (void)cudaRuntimeGetVersion(&runtime);
  const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
  std::fprintf(stderr,
               "%s: cannot run: no CUDA device is visible (cudaGetDeviceCount: %s); check that an NVIDIA driver "
               "for CUDA %d.%d or newer is loaded (nvidia-smi) and that CUDA_VISIBLE_DEVICES (%s%s%s) does not "
               "hide the GPUs\n",
               program, cudaGetErrorName(status), runtime / 1000, runtime % 1000 / 10, mask ? "now '" : "unset",
               mask ? mask : "", mask ? "'" : "");
  return 77;
}

}  // namespace examples
