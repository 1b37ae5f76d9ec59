#pragma once
// What the driver and the kernel tell about the devices and the links between them,
// before anything is measured.

#include "verdicts.hpp"
#include <multigpu/runtime/device_group.hpp>

#include <string>
#include <vector>

namespace multigpu::doctor {

/// The process's view of CUDA; empty strings where unknown.
struct environment {
  int driver_version = 0;   ///< cudaDriverGetVersion, e.g. 13000
  int runtime_version = 0;  ///< cudaRuntimeGetVersion
  int visible_devices = 0;
  std::string cuda_visible_devices;  ///< the variable's value; empty when unset
  bool cuda_visible_devices_set = false;
  bool launch_blocking = false;      ///< CUDA_LAUNCH_BLOCKING=1
  std::string process_cpus;          ///< CPUs this process may run on, as a cpulist
  // The scale-out engines of this build: MPI's library version string and whether it is
  // CUDA-aware, NCCL's version (e.g. 22803); empty or 0 where not built or not found.
  bool mpi_built = false;
  std::string mpi_library;
  bool mpi_cuda_aware = false;
  bool nccl_built = false;
  int nccl_version = 0;
};

environment probe_environment(int visible_devices);

/// One entry per distinct device of the group, in first-seen order, with the slots it fills.
std::vector<device_info> probe_devices(const device_group& group);

/// A copy the doctor measures between two slots of the group.
struct slot_pair {
  std::size_t from_slot;
  std::size_t to_slot;
};

/// Every ordered pair of distinct devices, plus one pair within each device that fills more
/// than one slot (a same-device pair), in first-seen order.
std::vector<slot_pair> plan_pairs(const std::vector<int>& slot_devices);

/// The peer matrix entry of each planned pair: driver capability (asked directly, so that it
/// shows even under --host-staged), what the group enabled and verified, and the link's
/// rank and atomics (cudaDeviceGetP2PAttribute).
std::vector<peer_info> probe_peers(const device_group& group, const std::vector<slot_pair>& pairs);

/// "1.5" for 1500-style CUDA versions (major * 1000 + minor * 10).
std::string format_cuda_version(int version);

}  // namespace multigpu::doctor
