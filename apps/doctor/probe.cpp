#include "probe.hpp"

#include <multigpu/core/device_guard.hpp>
#include <multigpu/runtime/device_group.hpp>

#if defined(MULTIGPU_HAS_MPI)
#include <multigpu/comm/mpi_communicator.hpp>
#endif
#if defined(MULTIGPU_HAS_NCCL)
#include <multigpu/comm/nccl_communicator.hpp>
#endif

#include <sched.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

namespace multigpu::doctor {
namespace {

// The first line of a sysfs file, trimmed; empty when it cannot be read (no such device
// in a container's /sys, older kernels).
std::string read_first_line(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return {};
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

// CUDA spells bus ids "0000:1B:00.0" or with an 8-digit domain; sysfs uses lower case and
// a 4-digit domain.
std::filesystem::path sysfs_device_path(std::string bus_id) {
  std::transform(bus_id.begin(), bus_id.end(), bus_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::filesystem::path root = "/sys/bus/pci/devices";
  std::error_code ignored;
  if (std::filesystem::exists(root / bus_id, ignored)) return root / bus_id;
  const std::size_t colon = bus_id.find(':');
  if (colon != std::string::npos && colon > 4) {
    const std::string short_domain = bus_id.substr(colon - 4);
    if (std::filesystem::exists(root / short_domain, ignored)) return root / short_domain;
  }
  return {};
}

// An attribute some drivers do not know: those answer cudaErrorInvalidValue, which means
// "not told" here; any other failure is a real error.
int optional_attribute(cudaDeviceAttr attribute, int device, int fallback) {
  int value = fallback;
  cudaError_t status = cudaDeviceGetAttribute(&value, attribute, device);
  if (status == cudaErrorInvalidValue || status == cudaErrorNotSupported) {
    (void)cudaGetLastError();
    return fallback;
  }
  MULTIGPU_CUDA_TRY(status);
  return value;
}

std::string link_text(const std::string& speed, const std::string& width) {
  if (speed.empty() && width.empty()) return {};
  return speed + (width.empty() ? std::string() : " x" + width);
}

std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) out += '-' + std::to_string(last);
    cpu = last;
  }
  return out;
}

}  // namespace

std::string format_cuda_version(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

environment probe_environment(int visible_devices) {
  environment env;
  env.visible_devices = visible_devices;
  MULTIGPU_CUDA_TRY(cudaDriverGetVersion(&env.driver_version));
  MULTIGPU_CUDA_TRY(cudaRuntimeGetVersion(&env.runtime_version));
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) {
    env.cuda_visible_devices = v;
    env.cuda_visible_devices_set = true;
  }
  if (const char* v = std::getenv("CUDA_LAUNCH_BLOCKING")) env.launch_blocking = std::string_view(v) == "1";
#if defined(MULTIGPU_HAS_MPI)
  env.mpi_built = true;
  {
    // Allowed before MPI_Init: the doctor never starts MPI itself.
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int length = 0;
    if (MPI_Get_library_version(version, &length) == MPI_SUCCESS) {
      env.mpi_library.assign(version, static_cast<std::size_t>(std::max(length, 0)));
      while (!env.mpi_library.empty() && (env.mpi_library.back() == '\n' || env.mpi_library.back() == '\0'))
        env.mpi_library.pop_back();
      if (const auto cut = env.mpi_library.find(','); cut != std::string::npos) env.mpi_library.resize(cut);
    }
    env.mpi_cuda_aware = mpi_cuda_aware();
  }
#endif
#if defined(MULTIGPU_HAS_NCCL)
  env.nccl_built = true;
  env.nccl_version = nccl_runtime_version();
#endif
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) env.process_cpus = cpu_list(set);
  return env;
}

std::vector<device_info> probe_devices(const device_group& group) {
  std::vector<device_info> out;
  for (std::size_t slot = 0; slot < group.size(); ++slot) {
    const int id = group.device(slot);
    auto known = std::find_if(out.begin(), out.end(), [&](const device_info& d) { return d.ordinal == id; });
    if (known != out.end()) {
      known->slots.push_back(slot);
      continue;
    }
    device_info d;
    d.ordinal = id;
    d.slots.push_back(slot);
    cudaDeviceProp prop{};
    MULTIGPU_CUDA_TRY(cudaGetDeviceProperties(&prop, id));
    d.name = prop.name;
    d.memory_bytes = prop.totalGlobalMem;
    d.compute_major = prop.major;
    d.compute_minor = prop.minor;
    d.multiprocessors = prop.multiProcessorCount;
    {
      device_guard guard(id);
      std::size_t total = 0;
      MULTIGPU_CUDA_TRY(cudaMemGetInfo(&d.free_memory_bytes, &total));
    }
    char bus[32] = {};
    MULTIGPU_CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof(bus), id));
    d.pci_bus_id = bus;
    d.pageable_uses_host_page_tables =
        optional_attribute(cudaDevAttrPageableMemoryAccessUsesHostPageTables, id, 0) != 0;

    // The kernel knows the device's NUMA node, its local CPUs and its PCIe link; the
    // driver's own NUMA answer is the fallback where /sys is not mounted.
    const std::filesystem::path sysfs = sysfs_device_path(d.pci_bus_id);
    if (!sysfs.empty()) {
      const std::string node = read_first_line(sysfs / "numa_node");
      if (!node.empty()) d.numa_node = std::atoi(node.c_str());
      d.local_cpus = read_first_line(sysfs / "local_cpulist");
      d.pcie_link = link_text(read_first_line(sysfs / "current_link_speed"),
                              read_first_line(sysfs / "current_link_width"));
      d.pcie_link_max = link_text(read_first_line(sysfs / "max_link_speed"),
                                  read_first_line(sysfs / "max_link_width"));
    }
    if (d.numa_node < 0) d.numa_node = optional_attribute(cudaDevAttrHostNumaId, id, -1);
    out.push_back(std::move(d));
  }
  return out;
}

std::vector<slot_pair> plan_pairs(const std::vector<int>& slot_devices) {
  auto first_slot = [&](int device, std::size_t after = 0) -> std::ptrdiff_t {
    for (std::size_t s = after; s < slot_devices.size(); ++s)
      if (slot_devices[s] == device) return static_cast<std::ptrdiff_t>(s);
    return -1;
  };
  std::vector<int> distinct;
  for (int d : slot_devices)
    if (std::find(distinct.begin(), distinct.end(), d) == distinct.end()) distinct.push_back(d);
  std::vector<slot_pair> pairs;
  for (int a : distinct) {
    const auto from = static_cast<std::size_t>(first_slot(a));
    for (int b : distinct) {
      if (a != b) {
        pairs.push_back({from, static_cast<std::size_t>(first_slot(b))});
      } else if (std::ptrdiff_t second = first_slot(a, from + 1); second >= 0) {
        pairs.push_back({from, static_cast<std::size_t>(second)});
      }
    }
  }
  return pairs;
}

std::vector<peer_info> probe_peers(const device_group& group, const std::vector<slot_pair>& pairs) {
  std::vector<peer_info> out;
  for (const slot_pair& p : pairs) {
    peer_info info;
    info.from = group.device(p.from_slot);
    info.to = group.device(p.to_slot);
    info.same_device = info.from == info.to;
    info.used_route = group.route_between(p.from_slot, p.to_slot).kind;
    if (!info.same_device) {
      int can = 0;
      MULTIGPU_CUDA_TRY(cudaDeviceCanAccessPeer(&can, info.from, info.to));
      info.can_access = can != 0;
      const peer_link link = group.link(p.from_slot, p.to_slot);
      info.enabled = link.enabled;
      info.verified = link.verified;
      int rank = -1, atomics = 0;
      MULTIGPU_CUDA_TRY(cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, info.from, info.to));
      MULTIGPU_CUDA_TRY(cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, info.from, info.to));
      info.performance_rank = info.can_access ? rank : -1;
      info.native_atomics = atomics != 0;
    }
    out.push_back(info);
  }
  return out;
}

}  // namespace multigpu::doctor
