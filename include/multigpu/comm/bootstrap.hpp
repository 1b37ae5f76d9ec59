#pragma once
// Launch bootstrap: which rank this process is, of how many, and which GPU it takes. The
// library never starts processes; mpirun, srun or torchrun do, and leave their answer in the
// environment. With MPI initialised, mpi_bootstrap() (multigpu/comm/mpi_communicator.hpp)
// asks MPI instead. Pure host logic apart from launch_device().

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace multigpu {

struct launch_info {
  int rank = 0;
  int size = 1;
  int local_rank = 0;  ///< rank among the processes on this host
  /// Where it came from: "MPI", "OMPI_COMM_WORLD_*", "PMI_*", "SLURM_*", "torchrun" or
  /// "single process".
  std::string source = "single process";
  friend bool operator==(const launch_info&, const launch_info&) = default;
};

/// Reads the launcher's variables through `lookup` (a getenv; nullptr means unset), first
/// match wins:
///   OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK   (Open MPI's mpirun)
///   PMI_RANK / PMI_SIZE, local rank from PMI_LOCAL_RANK or MPI_LOCALRANKID   (MPICH, Intel MPI)
///   SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID   (srun)
///   RANK / WORLD_SIZE / LOCAL_RANK   (torchrun)
/// A missing local rank is taken as the rank (one host). No launcher: std::nullopt.
/// Malformed or inconsistent values (not a number, rank >= size, size < 1) throw
/// std::invalid_argument naming the variable.
std::optional<launch_info> launch_from_environment(const std::function<const char*(const char*)>& lookup);

/// The process environment's launch_info, or a single process (rank 0 of 1) without a launcher.
launch_info bootstrap();

/// The GPU of a local rank: local_rank % visible_devices (several ranks share a GPU when
/// there are more ranks than GPUs on a host). visible_devices must be positive.
int local_device_for(int local_rank, int visible_devices);

/// local_device_for(info.local_rank, the visible CUDA devices); throws multigpu::cuda_error
/// when no GPU is visible.
int launch_device(const launch_info& info);

}  // namespace multigpu
