#include <multigpu/transfer/host_transfer.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/diagnostics.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>

#include <algorithm>
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

}  // namespace multigpu::transfer
