#pragma once
// What multigpu-doctor measured, and the verdicts drawn from it. The verdicts are a pure
// function of the measurements, so the three problems the doctor looks for are tested
// without a GPU:
//   - async copies as slow as sync copies mean the host memory is not pinned;
//   - peer copies far below PCIe speed mean P2P is not enabled;
//   - copies and kernels running one after the other mean the streams or the double
//     buffering are not working.
// Bandwidths are decimal GB/s (1e9 bytes per second), as vendors quote links.

#include <multigpu/runtime/topology.hpp>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace multigpu::doctor {

/// The thresholds the checks apply, each with the reason for its value.
namespace thresholds {

/// An async copy that keeps the host inside cudaMemcpyAsync for more than this fraction
/// of the copy's own time is a sync copy in disguise. From pinned memory the call returns
/// after microseconds (the copy takes milliseconds), from pageable memory only once the
/// driver has staged (nearly) all of it: the two land near 0 and near 1, and one half
/// splits them with room for scheduling noise.
inline constexpr double async_host_blocked_max = 0.5;

/// Pinned async copies must beat cudaMemcpy from pageable memory by this factor. Pageable
/// data costs an extra host memcpy into the driver's staging buffers, which one thread does
/// at 10-30 GB/s, below a PCIe 4.0/5.0 x16 link (25/55 GB/s), so a working pinned path
/// wins by far more; 15% is beyond the run-to-run noise of a few 256 MiB copies.
inline constexpr double pinned_speedup_min = 1.15;

/// cudaMemcpyAsync from pageable memory "runs at sync speed" when its bandwidth is within
/// this fraction of cudaMemcpy's (and it blocks the host, see above).
inline constexpr double same_speed_tolerance = 0.15;

/// A peer copy must reach at least this fraction of the host-staged route (device to
/// pinned host memory to device). A working NVLink or PCIe-switch link beats that round
/// trip, which crosses the host twice; a copy below it means the data goes through the
/// host anyway (P2P not enabled) or over PCIe through the CPU's root complex. 10% below
/// parity is allowed for timing noise when a PCIe link and the round trip are close.
inline constexpr double peer_over_staged_min = 0.9;

/// Overlap: at least this fraction of the shorter of copy and kernel must hide behind the
/// longer when they run on different streams. The copy engine and the SMs are separate, so
/// a working overlap hides nearly all of it (above 0.9) and a serialised pair hides none;
/// one half splits them with room for launch latency and noise.
inline constexpr double overlap_hidden_min = 0.5;

/// The overlap figure is meaningful only when copy and kernel take comparable time (the
/// doctor sizes the kernel to the copy); below this ratio of shorter to longer the check
/// reports that it could not measure instead of judging.
inline constexpr double overlap_balance_min = 0.25;

}  // namespace thresholds

/// One inspected GPU. Strings and numbers the driver does not tell stay empty or -1.
struct device_info {
  int ordinal = 0;
  std::vector<std::size_t> slots;  ///< the positions it fills in --devices
  std::string name;
  std::size_t memory_bytes = 0;
  std::size_t free_memory_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
  int multiprocessors = 0;
  std::string pci_bus_id;
  int numa_node = -1;        ///< host NUMA node closest to the device
  std::string local_cpus;    ///< host CPUs closest to the device, as a cpulist ("0-31,64-95")
  std::string pcie_link;     ///< current PCIe link speed and width, e.g. "32.0 GT/s PCIe x16"
  std::string pcie_link_max;
  /// The GPU reaches pageable host memory through the host's page tables (ATS, e.g.
  /// Grace Hopper): pageable copies need not be staged, so pinning matters less.
  bool pageable_uses_host_page_tables = false;
};

/// Peer access between two devices: what the driver allows and what this process did.
struct peer_info {
  int from = 0;
  int to = 0;
  bool same_device = false;  ///< a device repeated in --devices: no link involved
  bool can_access = false;   ///< cudaDeviceCanAccessPeer(from, to)
  bool enabled = false;      ///< peer access enabled by the group
  bool verified = false;     ///< a known pattern copied over the link arrived intact
  int performance_rank = -1; ///< cudaDevP2PAttrPerformanceRank (lower is faster), -1 unknown
  bool native_atomics = false;
  route used_route = route::host_staged;  ///< the route the group's copies take
  /// Peer copies may use this link (as peer_link::usable).
  bool usable() const noexcept { return can_access && enabled && verified; }
};

enum class copy_direction { host_to_device, device_to_host };
std::string_view to_string(copy_direction d) noexcept;

/// Host <-> device copies of one device in one direction. *_host_blocked is the time the
/// host spent inside cudaMemcpyAsync over the copy's time on the GPU (0: returned at once,
/// 1: returned when done). A value that was not measured is 0.
struct host_copy_measurement {
  int device = 0;
  copy_direction direction = copy_direction::host_to_device;
  double pageable_sync_gbps = 0;   ///< cudaMemcpy, pageable host memory
  double pageable_async_gbps = 0;  ///< cudaMemcpyAsync, pageable host memory
  double pageable_async_host_blocked = 0;
  double pinned_sync_gbps = 0;     ///< cudaMemcpy, pinned host memory
  double pinned_async_gbps = 0;    ///< cudaMemcpyAsync, pinned host memory
  double pinned_async_host_blocked = 0;
};

/// A copy from one device to another (or between two slots of one device).
struct peer_copy_measurement {
  int from = 0;
  int to = 0;
  bool same_device = false;
  /// cudaMemcpyPeerAsync for distinct devices (what a user calls; the driver stages it
  /// through the host when peer access is off), cudaMemcpyAsync on one device.
  double direct_gbps = 0;
  /// multigpu's host-staged route: device to pinned host memory to device, double buffered.
  double host_staged_gbps = 0;
};

/// A host-to-device copy from pinned memory and a kernel of about the same duration.
struct overlap_measurement {
  int device = 0;
  double copy_ms = 0;        ///< the copy alone
  double kernel_ms = 0;      ///< the kernel alone
  double serial_ms = 0;      ///< copy then kernel on one stream
  double overlapped_ms = 0;  ///< copy and kernel on two streams, started together
};

struct measurements {
  std::size_t transfer_bytes = 0;
  int repetitions = 0;
  bool host_staged = false;      ///< --host-staged: the group refuses peer access
  bool launch_blocking = false;  ///< CUDA_LAUNCH_BLOCKING=1 in the environment
  std::vector<device_info> devices;
  std::vector<peer_info> peers;
  std::vector<host_copy_measurement> host_copies;
  std::vector<peer_copy_measurement> peer_copies;
  std::vector<overlap_measurement> overlaps;
};

/// pass: healthy. info: nothing to fix on the machine, but something to know (and the
/// check may not apply). warn: a limit of the machine that multigpu works around. fail:
/// something is wrong, and the advice says what to do.
enum class status { pass, info, warn, fail };
std::string_view to_string(status s) noexcept;

struct verdict {
  std::string check;    ///< pinned_copy, pageable_async, peer_copy or copy_kernel_overlap
  std::string subject;  ///< "device 0 H2D", "0 -> 1", "device 0"
  status result = status::info;
  std::string finding;  ///< what was measured, and what it means
  std::string advice;   ///< what to do about it; empty when nothing is needed
};

/// Every check on every subject of `m`, in the order: host copies, peer copies, overlap.
std::vector<verdict> judge(const measurements& m);

/// 0 when no verdict failed, 1 otherwise (the doctor's exit status once it could run).
int exit_status(const std::vector<verdict>& verdicts) noexcept;

/// How many verdicts have result `s`.
std::size_t count(const std::vector<verdict>& verdicts, status s) noexcept;

/// Bandwidth in decimal GB/s of `bytes` moved in `milliseconds`; 0 for a non-positive time.
double gigabytes_per_second(std::size_t bytes, double milliseconds) noexcept;

/// The fraction of the shorter of copy and kernel hidden by running them on two streams:
/// (serial - overlapped) / min(copy, kernel), clamped to [0, 1].
double hidden_fraction(const overlap_measurement& o) noexcept;

}  // namespace multigpu::doctor
