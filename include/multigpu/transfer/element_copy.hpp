#pragma once
// Reading and writing scattered elements between host memory and the segments of a group:
// what distributed_vector::read and write (one index or many) are made of. Every element is
// copied on its segment's stream, after the work already enqueued there, through one pinned
// staging block for the whole batch; each stream is fenced once, however many of the
// elements it holds. Managed memory is read and written by the host itself.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>

namespace multigpu::detail {
class group_resources;
}

namespace multigpu::transfer {

/// Where one element lives: its segment's device and stream, and its address there.
struct element_place {
  int device = 0;
  cudaStream_t stream = nullptr;
  void* address = nullptr;
  bool managed = false;  ///< storage::managed: the host may touch it once `stream` is idle
};

/// Copies the element at places[j] to host[j * element_bytes], for every j. Returns once the
/// host holds them: one wait for the whole batch.
void read_elements(detail::group_resources& group, std::span<const element_place> places,
                   std::size_t element_bytes, void* host);
/// Copies host[j * element_bytes] to the element at places[j], for every j, ordered after the
/// work already enqueued on its stream. Returns once the copies are enqueued (managed
/// elements: once written, and their pages sent back to the device on the stream); `host`
/// may be reused at once.
void write_elements(detail::group_resources& group, std::span<const element_place> places,
                    std::size_t element_bytes, const void* host);

}  // namespace multigpu::transfer
