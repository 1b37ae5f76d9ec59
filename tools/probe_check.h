// What the standalone probes under tools/ share (built with nvcc alone, not the library):
// CHECK (a failed CUDA call prints the call and the error and ends the probe with exit
// code 2), the pool they allocate from, and the kernel that sums a buffer.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                \
      std::exit(2);                                                                \
    }                                                                              \
  } while (0)

/// A stream-ordered pool on the current device that keeps freed memory for reuse (release
/// threshold at the maximum), as the library's device_pool makes them.
inline cudaMemPool_t make_keeping_pool() {
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool;
  CHECK(cudaMemPoolCreate(&pool, &props));
  unsigned long long threshold = ~0ull;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  return pool;
}

/// *out += x[0] + ... + x[n - 1] (one thread an element): how the graph probes read a buffer.
__global__ void sum(const int* x, int n, unsigned long long* out) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, static_cast<unsigned long long>(x[i]));
}
