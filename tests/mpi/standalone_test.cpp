// Bad environments, without mpirun: an MPI communicator before MPI_Init and after
// MPI_Finalize, and (when built with NCCL, run with MULTIGPU_NCCL_LIBRARY pointing nowhere)
// NCCL missing at run time. Each must be a clear comm_error. Needs no GPU.

#include <multigpu/comm/mpi_communicator.hpp>
#include <multigpu/team/team.hpp>
#if MULTIGPU_HAS_NCCL
#include <multigpu/comm/nccl_communicator.hpp>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg = multigpu;

namespace {
int failures = 0;

template <class F>
void expect_comm_error(const char* what, const char* needle, F f) {
  try {
    f();
    std::fprintf(stderr, "FAILED: %s did not throw\n", what);
    ++failures;
  } catch (const mg::comm_error& e) {
    if (std::string(e.what()).find(needle) == std::string::npos) {
      std::fprintf(stderr, "FAILED: %s: message lacks \"%s\": %s\n", what, needle, e.what());
      ++failures;
    } else {
      std::printf("ok: %s: %s\n", what, e.what());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s threw another type: %s\n", what, e.what());
    ++failures;
  }
}
}  // namespace

int main(int argc, char** argv) {
  expect_comm_error("mpi_communicator before MPI_Init", "not initialised", [] { mg::mpi_communicator comm; });
  // Without MPI the bootstrap falls back to the environment.
  mg::launch_info info = mg::mpi_bootstrap();
  if (info.source == "MPI") {
    std::fprintf(stderr, "FAILED: mpi_bootstrap used MPI before MPI_Init\n");
    ++failures;
  }
  MPI_Init(&argc, &argv);
  {
    mg::mpi_communicator comm;
    if (comm.size() != 1 || comm.rank() != 0) {
      std::fprintf(stderr, "FAILED: a singleton MPI run is not rank 0 of 1\n");
      ++failures;
    }
    mg::team t(std::make_shared<mg::mpi_communicator>());
    if (t.enter(mg::team_operation::count, 4) != -1) ++failures;
    // Waiting for ever: MPI's blocking calls, on host buffers.
    comm.set_timeout(mg::communicator::forever);
    if (!comm.waits_forever()) {
      std::fprintf(stderr, "FAILED: set_timeout(forever) does not wait for ever\n");
      ++failures;
    }
    std::vector<double> in{1.5, -2.0}, out(2, 0.0), gathered(2, 0.0);
    comm.all_reduce(in.data(), out.data(), 2, mg::reduce_op::sum);
    comm.all_gather(in.data(), gathered.data(), 2);
    comm.barrier();
    if (out != in || gathered != in || comm.all_reduce(7, mg::reduce_op::max) != 7) {
      std::fprintf(stderr, "FAILED: the blocking collectives of one rank did not return its own values\n");
      ++failures;
    }
    try {
      comm.set_timeout(std::chrono::duration<double>(0.0));
      std::fprintf(stderr, "FAILED: a zero timeout was accepted\n");
      ++failures;
    } catch (const std::invalid_argument&) {
    }
  }
  MPI_Finalize();
  expect_comm_error("mpi_communicator after MPI_Finalize", "already finalised", [] { mg::mpi_communicator comm; });
#if MULTIGPU_HAS_NCCL
  if (const char* lib = std::getenv("MULTIGPU_NCCL_LIBRARY"); lib != nullptr && std::string(lib).find("nonexistent") != std::string::npos) {
    if (mg::nccl_runtime_available()) {
      std::fprintf(stderr, "FAILED: NCCL reported available from %s\n", lib);
      ++failures;
    }
    expect_comm_error("NCCL missing at run time", "NCCL is not available",
                      [] { mg::nccl_communicator::make_unique_id(); });
  }
#endif
  std::printf("%s\n", failures ? "FAILED" : "all passed");
  return failures ? 1 : 0;
}
