#pragma once
// Helpers shared by the tests that run under mpirun.

#include <mpi.h>

#include <multigpu/comm/bootstrap.hpp>
#include <multigpu/comm/mpi_communicator.hpp>

#include <cuda_runtime_api.h>

namespace mg_test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}
inline bool rank0() { return world_rank() == 0; }
/// This rank's GPU, chosen by the bootstrap (GPU 0 for every rank on a one-GPU machine).
/// The first call is collective (mpi_bootstrap splits MPI_COMM_WORLD by host).
inline int test_device() {
  static const int device = multigpu::launch_device(multigpu::mpi_bootstrap());
  return device;
}

}  // namespace mg_test
