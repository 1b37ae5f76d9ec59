// GoogleTest under mpirun: every rank runs every test (the tests are collective), only rank
// 0 prints the usual report, other ranks print their own failures prefixed with the rank,
// and the process fails when any rank failed. Exits with 77 (skipped) without a GPU, unless
// built with MULTIGPU_MPI_TESTS_WITHOUT_GPU (host-only tests).

#include <mpi.h>

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdio>

namespace {

class rank_failure_printer : public testing::EmptyTestEventListener {
 public:
  explicit rank_failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

#ifndef MULTIGPU_MPI_TESTS_WITHOUT_GPU  // host-only test binaries define it and run anywhere
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
  int fewest = devices;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest == 0) {
    if (rank == 0) std::printf("no CUDA device visible on some rank: skipped\n");
    MPI_Finalize();
    return 77;
  }
#endif

  testing::InitGoogleTest(&argc, argv);
  testing::TestEventListeners& listeners = testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new rank_failure_printer(rank));
  }
  if (rank == 0) std::printf("%d MPI rank(s)\n", size);
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = failed;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !failed) std::fprintf(stderr, "a test failed on another rank (see [rank N] lines)\n");
  MPI_Finalize();
  return any_failed;
}
