#include "verdicts.hpp"

#include <algorithm>
#include <cstdio>

namespace multigpu::doctor {
namespace {

namespace limits = thresholds;

std::string fixed(double value, int decimals = 1) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string gbps(double value) { return fixed(value) + " GB/s"; }
std::string percent(double fraction) { return fixed(fraction * 100.0, 0) + "%"; }

std::string device_subject(int device) { return "device " + std::to_string(device); }
std::string pair_subject(int from, int to) {
  return std::to_string(from) + " -> " + std::to_string(to);
}

const device_info* find_device(const measurements& m, int ordinal) {
  for (const device_info& d : m.devices)
    if (d.ordinal == ordinal) return &d;
  return nullptr;
}

peer_info find_link(const measurements& m, int from, int to) {
  for (const peer_info& p : m.peers)
    if (p.from == from && p.to == to) return p;
  peer_info unknown;  // nothing known: treat as no link
  unknown.from = from;
  unknown.to = to;
  unknown.same_device = from == to;
  return unknown;
}

verdict not_measured(std::string check, std::string subject) {
  return {std::move(check), std::move(subject), status::info, "not measured: no verdict", ""};
}

// Async copies as slow as sync copies mean the host memory is not pinned. The
// doctor pins its own buffer, so a failure here means pinning does not take effect.
verdict judge_pinned_copy(const measurements& m, const host_copy_measurement& h) {
  std::string subject = device_subject(h.device) + " " + std::string(to_string(h.direction));
  if (h.pinned_async_gbps <= 0 || h.pageable_sync_gbps <= 0)
    return not_measured("pinned_copy", subject);
  verdict v{"pinned_copy", subject, status::pass, "", ""};
  const double speedup = h.pinned_async_gbps / h.pageable_sync_gbps;
  if (h.pinned_async_host_blocked > limits::async_host_blocked_max) {
    v.result = status::fail;
    v.finding = "async copy from pinned memory held the host for " +
                percent(h.pinned_async_host_blocked) +
                " of the copy, like a sync copy: the host memory is not pinned";
    v.advice = "stage through memory from cudaHostAlloc or cudaHostRegister; the doctor's own "
               "buffer comes from cudaHostAlloc, so check that pinning is allowed here "
               "(ulimit -l, the container's memlock limit) and that nothing runs the process "
               "under CUDA_LAUNCH_BLOCKING=1";
    // That variable makes every async call synchronous: name it first when it is set.
    if (m.launch_blocking) v.advice = "CUDA_LAUNCH_BLOCKING=1 is set: unset it. " + v.advice;
    return v;
  }
  if (h.pinned_async_gbps < h.pageable_sync_gbps * limits::pinned_speedup_min) {
    const device_info* d = find_device(m, h.device);
    v.finding = "async copy from pinned memory at " + gbps(h.pinned_async_gbps) +
                " runs at the speed of cudaMemcpy from pageable memory (" +
                gbps(h.pageable_sync_gbps) + ")";
    if (d && d->pageable_uses_host_page_tables) {
      // Pageable memory is reached directly through the host's page tables: there is no
      // driver staging for pinning to save, so equal speeds are expected.
      v.result = status::warn;
      v.finding += ": this GPU reads pageable memory through the host's page tables, so "
                   "pinning gains little here";
      return v;
    }
    v.result = status::fail;
    v.finding += ": the host memory is not pinned, or DMA from it is throttled";
    v.advice = "stage through pinned memory (cudaHostAlloc); if it is pinned already, check the "
               "IOMMU mode (passthrough, iommu=pt) and the PCIe link";
    if (d && !d->pcie_link.empty())
      v.advice += " (now " + d->pcie_link +
                  (d->pcie_link_max.empty() ? std::string() : ", at most " + d->pcie_link_max) + ")";
    return v;
  }
  v.finding = "async copy from pinned memory at " + gbps(h.pinned_async_gbps) + ", " +
              fixed(speedup) + "x cudaMemcpy from pageable memory (" +
              gbps(h.pageable_sync_gbps) + "); the call returned after " +
              percent(h.pinned_async_host_blocked) + " of the copy";
  return v;
}

// The symptom of unpinned memory itself, shown for pageable memory: cudaMemcpyAsync cannot be
// asynchronous when the driver must first copy the data into its own pinned buffers. This
// is how CUDA works, not a fault of the machine, so it informs rather than fails.
verdict judge_pageable_async(const host_copy_measurement& h) {
  std::string subject = device_subject(h.device) + " " + std::string(to_string(h.direction));
  if (h.pageable_async_gbps <= 0 || h.pageable_sync_gbps <= 0)
    return not_measured("pageable_async", subject);
  verdict v{"pageable_async", subject, status::pass, "", ""};
  const bool sync_speed =
      h.pageable_async_gbps <= h.pageable_sync_gbps * (1.0 + limits::same_speed_tolerance);
  const bool holds_host = h.pageable_async_host_blocked > limits::async_host_blocked_max;
  const std::string numbers = "cudaMemcpyAsync from pageable memory at " +
                              gbps(h.pageable_async_gbps) + " against cudaMemcpy's " +
                              gbps(h.pageable_sync_gbps) + ", holding the host for " +
                              percent(h.pageable_async_host_blocked) + " of the copy";
  if (sync_speed || holds_host) {
    v.result = status::info;
    v.finding = "pageable async copy runs at sync speed (" + numbers +
                "): host memory not pinned";
    v.advice = "stage through pinned memory: copy pageable data into cudaHostAlloc buffers in "
               "chunks, double buffered, as multigpu's host transfers do";
    if (h.pinned_async_gbps > 0) v.advice += " (pinned async ran at " + gbps(h.pinned_async_gbps) + ")";
    return v;
  }
  v.finding = numbers + ": pageable async copies are asynchronous on this machine";
  return v;
}

// Peer copies far below PCIe speed mean P2P is not enabled. The reference for
// "PCIe speed" is the host-staged route measured in the same run.
verdict judge_peer_copy(const measurements& m, const peer_copy_measurement& p) {
  std::string subject = pair_subject(p.from, p.to);
  const peer_info link = find_link(m, p.from, p.to);
  if (p.same_device || p.from == p.to) {
    verdict v{"peer_copy", subject, status::info, "", ""};
    v.finding = "same device (repeated in --devices): no link to check; a copy on the device runs at " +
                gbps(p.direct_gbps);
    if (p.host_staged_gbps > 0)
      v.finding += std::string(m.host_staged ? ", and between its slots through pinned host memory "
                                               "(--host-staged) at "
                                             : "; the host-staged route would run at ") +
                   gbps(p.host_staged_gbps);
    return v;
  }
  if (m.host_staged) {
    verdict v{"peer_copy", subject, status::info, "", ""};
    v.finding = "P2P not used (--host-staged): copies go through pinned host memory at " +
                gbps(p.host_staged_gbps) + "; cudaMemcpyPeer without peer access ran at " +
                gbps(p.direct_gbps);
    return v;
  }
  if (p.direct_gbps <= 0 || p.host_staged_gbps <= 0) return not_measured("peer_copy", subject);

  verdict v{"peer_copy", subject, status::pass, "", ""};
  const std::string numbers = "peer copy " + subject + " at " + gbps(p.direct_gbps) +
                              ", host-staged " + gbps(p.host_staged_gbps);
  if (link.enabled && !link.verified) {
    v.result = status::fail;
    v.finding = "peer link " + subject + " delivered wrong data in its data check: multigpu "
                "demoted it to host staging (" + gbps(p.host_staged_gbps) + ")";
    v.advice = "do not trust P2P on this pair: update the driver and GPU firmware, and check "
               "ACS and the IOMMU on the PCIe switches, which can misroute peer traffic";
    return v;
  }
  if (link.can_access && !link.enabled) {
    v.result = status::fail;
    v.finding = "P2P is supported but could not be enabled (" + numbers + ")";
    v.advice = "cudaDeviceEnablePeerAccess refused: a device reaches at most 8 peers "
               "(cudaErrorTooManyPeers), and the kernel log (dmesg) tells other causes; "
               "multigpu stages this pair through pinned memory meanwhile";
    return v;
  }
  if (p.direct_gbps < p.host_staged_gbps * limits::peer_over_staged_min) {
    v.result = status::fail;
    v.finding = "peer copy " + subject + " at " + gbps(p.direct_gbps) + ", below host-staged " +
                gbps(p.host_staged_gbps) + ": P2P is not enabled or the link is PCIe through the CPU";
    if (link.usable())
      v.advice = "the link works but is slower than the host round trip, so it crosses the "
                 "CPU's root complex (nvidia-smi topo -m: SYS, NODE or PHB): place the GPUs "
                 "under one PCIe switch or NVLink, or stage this pair through the host "
                 "(peer_policy::host_staged)";
    else
      v.advice = "the driver reports no P2P for this pair (nvidia-smi topo -m); multigpu "
                 "stages it through pinned memory, and code calling cudaMemcpyPeer directly "
                 "should do the same";
    return v;
  }
  if (!link.usable()) {
    // No link, but cudaMemcpyPeer's own fallback is no slower than staging: a limit of the
    // topology that multigpu already works around.
    v.result = status::warn;
    v.finding = "no P2P between " + std::to_string(p.from) + " and " + std::to_string(p.to) +
                " (cudaDeviceCanAccessPeer says no): copies go through the host (" + numbers + ")";
    v.advice = "multigpu stages this pair through pinned memory; nvidia-smi topo -m shows "
               "whether another pair of GPUs shares a switch or NVLink";
    return v;
  }
  v.finding = numbers + ": " + fixed(p.direct_gbps / p.host_staged_gbps) +
              "x the host route over a verified P2P link";
  if (link.performance_rank >= 0)
    v.finding += " (performance rank " + std::to_string(link.performance_rank) + ")";
  return v;
}

// Copies and kernels running one after the other mean the streams or the
// double buffering are not working. The doctor uses two non-blocking streams and pinned
// memory, so a failure here points at something that serialises the whole GPU.
verdict judge_overlap(const measurements& m, const overlap_measurement& o) {
  std::string subject = device_subject(o.device);
  if (o.copy_ms <= 0 || o.kernel_ms <= 0 || o.serial_ms <= 0 || o.overlapped_ms <= 0)
    return not_measured("copy_kernel_overlap", subject);
  verdict v{"copy_kernel_overlap", subject, status::pass, "", ""};
  const double shorter = std::min(o.copy_ms, o.kernel_ms);
  const double longer = std::max(o.copy_ms, o.kernel_ms);
  if (shorter < longer * limits::overlap_balance_min) {
    v.result = status::info;
    v.finding = "could not size the kernel (" + fixed(o.kernel_ms, 2) + " ms) like the copy (" +
                fixed(o.copy_ms, 2) + " ms): no verdict";
    return v;
  }
  const double hidden = hidden_fraction(o);
  const std::string numbers = fixed(o.overlapped_ms, 2) + " ms on two streams against " +
                              fixed(o.serial_ms, 2) + " ms one after the other (" +
                              percent(hidden) + " of the shorter hidden)";
  if (hidden < limits::overlap_hidden_min) {
    v.result = status::fail;
    v.finding = "copy and kernel serialised: " + numbers +
                ": they share a stream or the host memory is pageable";
    v.advice = "the doctor used two non-blocking streams and pinned memory, so something "
               "serialises this GPU: CUDA_LAUNCH_BLOCKING=1, a profiler or debugger, or a "
               "sharing mode (MPS, time-sliced vGPU). In your own code, put copies and kernels "
               "on different non-blocking streams, copy from pinned memory and double buffer";
    if (m.launch_blocking) v.advice = "CUDA_LAUNCH_BLOCKING=1 is set: unset it. " + v.advice;
    return v;
  }
  v.finding = "copy and kernel overlap: " + numbers;
  return v;
}

}  // namespace

std::string_view to_string(copy_direction d) noexcept {
  return d == copy_direction::host_to_device ? "H2D" : "D2H";
}

std::string_view to_string(status s) noexcept {
  switch (s) {
    case status::pass: return "pass";
    case status::info: return "info";
    case status::warn: return "warn";
    case status::fail: return "fail";
  }
  return "unknown";
}

double gigabytes_per_second(std::size_t bytes, double milliseconds) noexcept {
  if (!(milliseconds > 0)) return 0;
  return static_cast<double>(bytes) / 1e9 / (milliseconds / 1e3);
}

double hidden_fraction(const overlap_measurement& o) noexcept {
  const double shorter = std::min(o.copy_ms, o.kernel_ms);
  if (!(shorter > 0)) return 0;
  return std::clamp((o.serial_ms - o.overlapped_ms) / shorter, 0.0, 1.0);
}

std::vector<verdict> judge(const measurements& m) {
  std::vector<verdict> out;
  for (const host_copy_measurement& h : m.host_copies) {
    out.push_back(judge_pinned_copy(m, h));
    out.push_back(judge_pageable_async(h));
  }
  for (const peer_copy_measurement& p : m.peer_copies) out.push_back(judge_peer_copy(m, p));
  for (const overlap_measurement& o : m.overlaps) out.push_back(judge_overlap(m, o));
  return out;
}

std::size_t count(const std::vector<verdict>& verdicts, status s) noexcept {
  return static_cast<std::size_t>(
      std::count_if(verdicts.begin(), verdicts.end(), [s](const verdict& v) { return v.result == s; }));
}

int exit_status(const std::vector<verdict>& verdicts) noexcept {
  return count(verdicts, status::fail) > 0 ? 1 : 0;
}

}  // namespace multigpu::doctor
