#pragma once
// Filling device memory with copies of one element, without templates: containers use it
// to value-initialise and to fill, so that their header compiles without a CUDA compiler.

#include <cuda_runtime_api.h>

#include <cstddef>

namespace multigpu::detail {

/// Writes `count` copies of the `pattern_bytes`-byte pattern to `destination`, on `stream`.
void fill_bytes(void* destination, std::size_t count, const void* pattern,
                std::size_t pattern_bytes, cudaStream_t stream);

}  // namespace multigpu::detail
