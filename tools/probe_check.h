// CHECK for the standalone probes under tools/ (built with nvcc alone, not the library):
// a failed CUDA call prints the call and the error and ends the probe with exit code 2.
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
