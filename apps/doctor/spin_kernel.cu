#include "spin_kernel.hpp"

#include <multigpu/core/error.hpp>

namespace multigpu::doctor {
namespace {

__global__ void spin(long long cycles, int* never_written) {
  const long long start = clock64();
  long long now = start;
  while (now - start < cycles) now = clock64();
  // clock64 is volatile, so the loop stays; the store only gives the kernel an effect.
  if (now == start - 1) *never_written = 1;
}

}  // namespace

void launch_spin(long long cycles, cudaStream_t stream) {
  spin<<<1, 32, 0, stream>>>(cycles, nullptr);
  MULTIGPU_CUDA_TRY(cudaGetLastError());
}

}  // namespace multigpu::doctor
