#pragma once
// A kernel that keeps one SM busy for a given number of clock cycles: the doctor's stand-in
// for "a kernel" when it checks that copies overlap kernels. It touches no memory, so it
// competes with the copy for nothing but the scheduling that is under test.

#include <cuda_runtime_api.h>

namespace multigpu::doctor {

/// Enqueues the spinning kernel on `stream` (of the current device).
void launch_spin(long long cycles, cudaStream_t stream);

}  // namespace multigpu::doctor
