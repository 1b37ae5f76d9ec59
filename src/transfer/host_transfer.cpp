#include <multigpu/transfer/host_transfer.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/diagnostics.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <system_error>
#include <thread>
#include <vector>

namespace multigpu::transfer {
namespace {

std::size_t total_bytes(std::span<const device_piece> pieces) {
  std::size_t total = 0;
  for (const auto& p : pieces) total += p.bytes;
  return total;
}

void synchronize_streams(std::span<const device_piece> pieces) {
  std::vector<cudaStream_t> done;
  for (const auto& p : pieces) {
    if (p.bytes == 0 || std::find(done.begin(), done.end(), p.stream) != done.end()) continue;
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(p.stream));
    done.push_back(p.stream);
  }
}

// One cudaMemcpyAsync per piece, from or to host memory the driver can use as it is.
void copy_directly(std::byte* host, std::span<const device_piece> pieces, cudaMemcpyKind kind) {
  std::size_t offset = 0;
  for (const auto& p : pieces) {
    if (p.bytes > 0) {
      device_guard guard(p.device);
      if (kind == cudaMemcpyHostToDevice)
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(p.data, host + offset, p.bytes, kind, p.stream));
      else
        MULTIGPU_CUDA_TRY(cudaMemcpyAsync(host + offset, p.data, p.bytes, kind, p.stream));
    }
    offset += p.bytes;
  }
}

}  // namespace

void copy_host_to_devices(detail::group_resources& group, const void* host,
                          std::span<const device_piece> pieces) {
  const std::size_t total = total_bytes(pieces);
  if (total == 0) return;
  auto* bytes = const_cast<std::byte*>(static_cast<const std::byte*>(host));
  // One range per call, named after the route, with the bytes moved as its payload.
  if (is_pinned(host, total)) {
    const nvtx_range range("host to devices: pinned, direct", total);
    diagnostics::note(diagnostics::path::pinned_host_upload);
    copy_directly(bytes, pieces, cudaMemcpyHostToDevice);
    synchronize_streams(pieces);  // the caller may reuse its buffer once we return
  } else if (total <= direct_pageable_bytes) {
    const nvtx_range range("host to devices: pageable, direct", total);
    // The driver copies small pageable sources into its own staging before returning.
    copy_directly(bytes, pieces, cudaMemcpyHostToDevice);
  } else {
    const nvtx_range range("host to devices: pageable, staged", total);
    diagnostics::note(diagnostics::path::staged_host_upload);
    group.stager().scatter(host, pieces);
  }
}

void copy_devices_to_host(detail::group_resources& group, void* host,
                          std::span<const device_piece> pieces) {
  const std::size_t total = total_bytes(pieces);
  if (total == 0) return;
  auto* bytes = static_cast<std::byte*>(host);
  const bool pinned = is_pinned(host, total);
  if (pinned || total <= direct_pageable_bytes) {
    const nvtx_range range("devices to host: direct", total);
    if (pinned) diagnostics::note(diagnostics::path::pinned_host_download);
    copy_directly(bytes, pieces, cudaMemcpyDeviceToHost);
    synchronize_streams(pieces);
  } else {
    const nvtx_range range("devices to host: pageable, staged", total);
    diagnostics::note(diagnostics::path::staged_host_download);
    group.stager().gather(host, pieces);
  }
}

void prefault_host(void* host, std::size_t bytes) {
  if (host == nullptr || bytes < prefault_bytes) return;
  const nvtx_range range("prefault host memory", bytes);
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto first = reinterpret_cast<std::uintptr_t>(host);
  const std::uintptr_t last = first + bytes;
#ifdef MADV_HUGEPAGE
  // Advice only: where transparent huge pages are off, nothing changes.
  const std::uintptr_t huge_first = (first + huge - 1) & ~(huge - 1);
  const std::uintptr_t huge_last = last & ~(huge - 1);
  if (huge_last > huge_first) (void)madvise(reinterpret_cast<void*>(huge_first), huge_last - huge_first, MADV_HUGEPAGE);
#endif
  const long page_size = sysconf(_SC_PAGESIZE);
  const std::uintptr_t page = page_size > 0 ? static_cast<std::uintptr_t>(page_size) : 4096;
  // One write per page, from the page that holds `from` (the allocation need not start on one).
  const auto touch = [page](std::uintptr_t from, std::uintptr_t to) {
    for (std::uintptr_t p = from & ~(page - 1); p < to; p += page)
      *reinterpret_cast<volatile char*>(std::max(p, from)) = 0;
  };
  // Parts of whole huge pages counted from the huge page that holds `first`, so that no two
  // threads fault the same one; the first and last parts are clipped to the range.
  const std::uintptr_t origin = first & ~(huge - 1);
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  const std::uintptr_t part = ((last - origin) / threads + huge - 1) & ~(huge - 1);
  const auto part_begin = [&](std::uintptr_t t) { return std::clamp(origin + t * part, first, last); };
  std::vector<std::thread> helpers;
  helpers.reserve(threads);  // no reallocation while threads run
  try {
    for (unsigned t = 1; t < threads && part_begin(t) < last; ++t)
      helpers.emplace_back(touch, part_begin(t), part_begin(t + 1));
  } catch (const std::system_error&) {
    // No more threads: the ones started and this one cover what they can, then this one the rest.
  }
  touch(part_begin(0), part_begin(1));
  for (auto& h : helpers) h.join();
  touch(part_begin(helpers.size() + 1), last);
}

}  // namespace multigpu::transfer
