#pragma once
// Persistent workers that move pageable host memory to and from devices through pinned
// buffers. Pageable memory cannot be read by DMA: it must be copied into pinned memory
// first, and that CPU copy is the bottleneck. So several threads copy chunks in parallel,
// each with its own ring of pinned buffers, and each buffer's DMA overlaps the CPU copy into
// the next one (double buffering, here triple). One set of workers serves the whole
// process: pinned memory is portable across devices, and threads are costly to start.

#include <multigpu/memory/detail/chunking.hpp>

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

namespace multigpu::detail {

/// One device-side range of a host transfer. The host side of consecutive pieces is
/// consecutive: piece i starts where piece i-1 ended.
struct device_piece {
  int device;
  cudaStream_t stream;
  void* data;
  std::size_t bytes;
};

class host_stager {
 public:
  /// The process's stager, created when first asked for and kept while anyone holds it.
  static std::shared_ptr<host_stager> shared();

  host_stager(unsigned workers, std::size_t chunk_bytes, unsigned buffers_per_worker);
  ~host_stager();
  host_stager(const host_stager&) = delete;
  host_stager& operator=(const host_stager&) = delete;

  /// Pageable host memory to devices. Returns once the host memory has been read; the DMAs
  /// are ordered on each piece's stream and may still be running.
  void scatter(const void* host, std::span<const device_piece> pieces);
  /// Devices to pageable host memory, ordered after earlier work on each piece's stream.
  /// Returns once the host memory holds the data.
  void gather(void* host, std::span<const device_piece> pieces);

  unsigned worker_count() const noexcept { return static_cast<unsigned>(threads_.size()); }
  std::size_t chunk_bytes() const noexcept { return chunk_bytes_; }

 private:
  struct job;
  struct worker;
  void run(worker& self);
  void stream_job(bool to_device, std::byte* host, std::span<const device_piece> pieces);

  std::size_t chunk_bytes_;
  unsigned buffers_per_worker_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<job>> queue_;
  bool stopping_ = false;
  std::vector<std::unique_ptr<worker>> workers_;
  std::vector<std::thread> threads_;
};

}  // namespace multigpu::detail
