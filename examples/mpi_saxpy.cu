// SAXPY over a team of MPI ranks, each on its own GPU:
//   mpirun -np 4 ./mpi_saxpy [--n N] [--slots K]
// y = a * x + y over a global vector of N elements spread in blocks over the ranks (each
// rank's part over K slots of its GPU), then a global reduce, checked against the exact
// value on every rank. Exit status: 0 when the sum is right, 1 when it is wrong, 77 when no
// GPU is visible; a call that fails ends the job with MPI_Abort(1).

#include <multigpu/comm.hpp>
#include <multigpu/comm/mpi_communicator.hpp>
#include <multigpu/team/team_algorithms.hpp>

#include <mpi.h>

#include "require_gpu.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <vector>

namespace mg = multigpu;

struct saxpy {
  float a;
  __host__ __device__ float operator()(float x) const { return a * x + 1.0f; }  // y = a x + y, y = 1
};

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::size_t n = 10'000'019;
  int slots = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--n") == 0) n = std::strtoull(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--slots") == 0) slots = std::atoi(argv[i + 1]);
  }
  int status = 0;
  try {
    // Who am I, and which GPU is mine (local rank modulo this host's GPUs).
    const mg::launch_info me = mg::mpi_bootstrap();
    if (mg::visible_device_count() == 0) {
      if (me.rank == 0) (void)examples::require_gpu("mpi_saxpy");
      MPI_Finalize();
      return 77;
    }
    const int device = mg::launch_device(me);
    mg::team team(std::make_shared<mg::mpi_communicator>(MPI_COMM_WORLD));
    mg::device_group local(std::vector<int>(static_cast<std::size_t>(slots), device));

    auto x = mg::team_vector<float>::block(team, n, local);
    mg::team_vector<float> y(team, x.local_size(), local);
    mg::iota(x, 0.0f);                       // x[i] = i (exact in float up to 2^24)
    mg::for_each(x, [] __device__(float& v) { v = static_cast<float>(static_cast<int>(v) % 8); });
    mg::transform(x, y, saxpy{2.0f});        // y[i] = 2 (i % 8) + 1

    const double sum = mg::reduce(y, 0.0f);  // partial sums < 2^24 per 8 elements: check in double below
    double expected = 0;
    for (std::size_t r = 0; r < 8; ++r) expected += static_cast<double>(n / 8 + (r < n % 8)) * (2.0 * r + 1);
    const long long above_eight = static_cast<long long>(mg::count_if(y, [] __host__ __device__(float v) { return v > 8.0f; }));
    if (me.rank == 0)
      std::printf("%d ranks (%s), %zu elements, %d slot(s) per rank on GPU %d: sum %.6g (expected %.6g), %lld > 8\n",
                  team.size(), me.source.c_str(), n, slots, device, sum, expected, above_eight);
    const double relative = expected == 0 ? sum : (sum - expected) / expected;
    if (relative > 1e-4 || relative < -1e-4) {
      if (me.rank == 0) std::fprintf(stderr, "mpi_saxpy: wrong sum\n");
      status = 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_saxpy: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
