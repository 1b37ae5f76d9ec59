#include <multigpu/comm/bootstrap.hpp>

#include <multigpu/core/error.hpp>

#include <cuda_runtime_api.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace multigpu {
namespace {

int parse_int(const char* variable, const char* text) {
  int value = 0;
  const char* end = text + std::strlen(text);
  auto [ptr, ec] = std::from_chars(text, end, value);
  MULTIGPU_EXPECTS(ec == std::errc() && ptr == end && ptr != text,
                   detail::concat("launch environment: ", variable, "=\"", text, "\" is not an integer"));
  return value;
}

struct scheme {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank[2];  // the first that is set wins
};

constexpr scheme schemes[] = {
    {"OMPI_COMM_WORLD_*", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", {"OMPI_COMM_WORLD_LOCAL_RANK", nullptr}},
    {"PMI_*", "PMI_RANK", "PMI_SIZE", {"PMI_LOCAL_RANK", "MPI_LOCALRANKID"}},
    {"SLURM_*", "SLURM_PROCID", "SLURM_NTASKS", {"SLURM_LOCALID", nullptr}},
    {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK", nullptr}},
};

}  // namespace

std::optional<launch_info> launch_from_environment(const std::function<const char*(const char*)>& lookup) {
  for (const scheme& s : schemes) {
    const char* rank = lookup(s.rank);
    if (rank == nullptr) continue;
    const char* size = lookup(s.size);
    MULTIGPU_EXPECTS(size != nullptr, detail::concat("launch environment: ", s.rank, " is set but ", s.size, " is not"));
    launch_info info;
    info.source = s.source;
    info.rank = parse_int(s.rank, rank);
    info.size = parse_int(s.size, size);
    MULTIGPU_EXPECTS(info.size >= 1, detail::concat("launch environment: ", s.size, "=", info.size, " is not positive"));
    MULTIGPU_EXPECTS(info.rank >= 0 && info.rank < info.size,
                     detail::concat("launch environment: ", s.rank, "=", info.rank, " is not in [0, ", s.size,
                                    "=", info.size, ")"));
    info.local_rank = info.rank;
    for (const char* name : s.local_rank) {
      if (name == nullptr) break;
      if (const char* local = lookup(name)) {
        info.local_rank = parse_int(name, local);
        MULTIGPU_EXPECTS(info.local_rank >= 0 && info.local_rank < info.size,
                         detail::concat("launch environment: ", name, "=", info.local_rank, " is not in [0, ",
                                        info.size, ")"));
        break;
      }
    }
    return info;
  }
  return std::nullopt;
}

launch_info bootstrap() {
  return launch_from_environment([](const char* name) { return std::getenv(name); }).value_or(launch_info{});
}

int local_device_for(int local_rank, int visible_devices) {
  MULTIGPU_EXPECTS(visible_devices > 0, "local_device_for: no visible device to choose from");
  MULTIGPU_EXPECTS(local_rank >= 0, detail::concat("local_device_for: negative local rank ", local_rank));
  return local_rank % visible_devices;
}

int launch_device(const launch_info& info) {
  int count = 0;
  MULTIGPU_CUDA_TRY(cudaGetDeviceCount(&count));
  return local_device_for(info.local_rank, count);
}

}  // namespace multigpu
