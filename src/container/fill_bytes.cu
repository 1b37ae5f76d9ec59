#include <multigpu/container/detail/fill_bytes.hpp>
#include <multigpu/core/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace multigpu::detail {
namespace {

template <class Word>
__global__ void fill_words(Word* destination, std::size_t count, Word value) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
    destination[i] = value;
}

// Patterns that are not a power-of-two word: each thread writes whole elements byte-wise
// from a pattern passed by value.
constexpr std::size_t max_kernel_pattern = 256;
struct pattern_block {
  unsigned char bytes[max_kernel_pattern];
};

__global__ void fill_pattern(unsigned char* destination, std::size_t count, pattern_block pattern,
                             std::size_t pattern_bytes) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < count; i += stride)
    for (std::size_t b = 0; b < pattern_bytes; ++b) destination[i * pattern_bytes + b] = pattern.bytes[b];
}

unsigned grid_for(std::size_t count) {
  constexpr std::size_t threads = 256;
  return static_cast<unsigned>(std::min<std::size_t>((count + threads - 1) / threads, 65535u * 8));
}

template <class Word>
void launch_words(void* destination, std::size_t count, const void* pattern, cudaStream_t stream) {
  Word value;
  std::memcpy(&value, pattern, sizeof(Word));
  fill_words<<<grid_for(count), 256, 0, stream>>>(static_cast<Word*>(destination), count, value);
  MULTIGPU_CUDA_TRY(cudaGetLastError());
}

}  // namespace

void fill_bytes(void* destination, std::size_t count, const void* pattern,
                std::size_t pattern_bytes, cudaStream_t stream) {
  if (count == 0 || pattern_bytes == 0) return;
  const auto* p = static_cast<const unsigned char*>(pattern);
  if (std::all_of(p, p + pattern_bytes, [&](unsigned char b) { return b == p[0]; })) {
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(destination, p[0], count * pattern_bytes, stream));
    return;
  }
  const auto address = reinterpret_cast<std::uintptr_t>(destination);
  switch (pattern_bytes) {
    case 2: if (address % 2 == 0) return launch_words<std::uint16_t>(destination, count, pattern, stream); break;
    case 4: if (address % 4 == 0) return launch_words<std::uint32_t>(destination, count, pattern, stream); break;
    case 8: if (address % 8 == 0) return launch_words<std::uint64_t>(destination, count, pattern, stream); break;
    case 16: if (address % 16 == 0) return launch_words<uint4>(destination, count, pattern, stream); break;
    default: break;
  }
  if (pattern_bytes <= max_kernel_pattern) {
    pattern_block block{};
    std::memcpy(block.bytes, pattern, pattern_bytes);
    fill_pattern<<<grid_for(count), 256, 0, stream>>>(static_cast<unsigned char*>(destination), count,
                                                      block, pattern_bytes);
    MULTIGPU_CUDA_TRY(cudaGetLastError());
    return;
  }
  // Larger elements: place one copy, then double the filled prefix with device copies.
  auto* bytes = static_cast<unsigned char*>(destination);
  MULTIGPU_CUDA_TRY(cudaMemcpyAsync(bytes, pattern, pattern_bytes, cudaMemcpyHostToDevice, stream));
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));  // `pattern` is the caller's pageable memory
  for (std::size_t filled = 1; filled < count;) {
    std::size_t n = std::min(filled, count - filled);
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(bytes + filled * pattern_bytes, bytes, n * pattern_bytes,
                                      cudaMemcpyDeviceToDevice, stream));
    filled += n;
  }
}

}  // namespace multigpu::detail
