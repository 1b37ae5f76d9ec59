// Host-only use of the installed scale-out components; needs no GPU and no mpirun.
#include <multigpu/comm.hpp>

#include <cstdio>

namespace mg = multigpu;

int main() {
  mg::team team = mg::team::in_process();
  if (team.comm().all_gather(42) != std::vector<int>{42}) return 1;
#if !MULTIGPU_HAS_MPI
  return 1;  // multigpu::mpi must bring its definition and mpi_communicator.hpp
#else
  const mg::launch_info me = mg::mpi_bootstrap();  // MPI not initialised: the environment
#endif
#if MULTIGPU_HAS_NCCL
  std::printf("NCCL at run time: %s\n", mg::nccl_runtime_available() ? "yes" : "no");
#endif
  std::printf("rank %d of %d (%s)\n", me.rank, me.size, me.source.c_str());
  return 0;
}
