// The default mpi_communicator (mpi_wait::watchdog) against a peer that does not arrive. Run
// under mpirun -np 2: rank 0 enters a barrier with a 1 s timeout; rank 1 either stalls for
// 30 s ("stall", and "stall-multiple" with MPI at MPI_THREAD_MULTIPLE, where the watchdog
// may call MPI_Abort itself) or exits without finalising ("exit"). The job must end within seconds with a
// message naming the stuck call (the watchdog's) or the dead rank (mpirun's); the test's
// pass condition is that message (tests/CMakeLists.txt). Needs no GPU.

#include <multigpu/comm/mpi_communicator.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace mg = multigpu;

int main(int argc, char** argv) {
  const bool exits = argc > 1 && std::strcmp(argv[1], "exit") == 0;
  const bool multiple = argc > 1 && std::strcmp(argv[1], "stall-multiple") == 0;
  if (multiple) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided != MPI_THREAD_MULTIPLE) {
      std::printf("this MPI does not provide MPI_THREAD_MULTIPLE: skipped\n");
      MPI_Finalize();
      return 77;
    }
  } else {
    MPI_Init(&argc, &argv);
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) std::printf("watchdog_test needs 2 ranks, got %d: skipped\n", size);
    MPI_Finalize();
    return 77;
  }
  {
    mg::mpi_communicator comm;
    comm.set_timeout(std::chrono::seconds(1));
    comm.barrier();  // both ranks are here
    if (rank == 1) {
      if (exits) _exit(0);  // dies mid-job, without MPI_Finalize
      std::this_thread::sleep_for(std::chrono::seconds(30));
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      comm.barrier();  // rank 0 waits here for a peer that does not come
    } catch (const mg::comm_error& e) {
      // Only with the MPI fault-tolerance extension: the revoked call throws.
      std::printf("rank %d: comm_error after %.1f s: %s\n", rank,
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), e.what());
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
    std::printf("FAILED: rank %d's barrier returned after %.1f s; the watchdog did not end the job\n", rank,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  MPI_Finalize();
  return 1;
}
