#pragma once
// The doctor's measurements, timed with CUDA events: host <-> device copies from pageable
// and pinned memory, device-to-device copies direct and host-staged, and a copy overlapped
// with a kernel against the two run one after the other.

#include "probe.hpp"

#include "verdicts.hpp"
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

namespace multigpu::doctor {

/// Plain cudaMalloc memory on one device. Plain on purpose: the copies measured are the
/// ones a user makes, and peer copies between such allocations need no pool access grant.
class device_memory {
 public:
  device_memory(int device, std::size_t bytes);
  ~device_memory();
  device_memory(const device_memory&) = delete;
  device_memory& operator=(const device_memory&) = delete;
  void* data() const noexcept { return data_; }

 private:
  int device_;
  void* data_ = nullptr;
};

class measurement_bench {
 public:
  /// Allocates one pageable and one pinned host buffer of `bytes`, and a source and a
  /// destination buffer of `bytes` on each distinct device of the group.
  measurement_bench(device_group group, std::size_t bytes, int repetitions);
  ~measurement_bench();

  /// Both directions for each distinct device.
  std::vector<host_copy_measurement> host_copies();
  /// Each pair directly (cudaMemcpyPeerAsync, or cudaMemcpyAsync on one device) and through
  /// multigpu's host-staged route.
  std::vector<peer_copy_measurement> peer_copies(const std::vector<slot_pair>& pairs);
  /// A pinned host-to-device copy and a kernel of the same length, on each distinct device.
  std::vector<overlap_measurement> overlaps();

 private:
  struct device_buffers {
    int device;
    std::size_t slot;  // the device's first slot in the group
    std::unique_ptr<device_memory> source;
    std::unique_ptr<device_memory> destination;
  };
  const device_buffers& buffers_of(int device) const;

  device_group group_;
  std::optional<device_group> staged_group_;  // the host-staged route, when group_ is automatic
  std::size_t bytes_;
  int repetitions_;
  std::unique_ptr<std::byte[]> pageable_;
  pinned_buffer pinned_;
  std::vector<device_buffers> devices_;
};

}  // namespace multigpu::doctor
