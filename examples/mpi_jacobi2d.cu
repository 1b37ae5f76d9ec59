// 2-D Jacobi iteration for Laplace's equation on a team_mdarray: the grid split over MPI
// ranks, each rank's box over its slots. Each sweep is one stencil_transform: the inner region
// of every tile is enqueued, then the ranks exchange their faces through the host while the
// GPUs compute it, then the boundary strips. Every k sweeps the squared change is reduced over
// the whole grid (a host value on every rank); the sweeps stop once it falls below the
// tolerance. Every rank repeats the computation on the host and compares.
//
// The boundary: u = 1 beyond the first and last rows (dimension 0 fixed at 1), u = 0 beyond the
// first and last columns (dimension 1 fixed at 0).
//
//   mpirun -np 4 mpi_jacobi2d [--slots 1] [--rows 300] [--cols 200] [--iterations 2000]
//                             [--check-every 50] [--tolerance 1e-6]
//
// Exit status: 0 when every rank's result agrees with its host's (and after --help), 1 when one
// differs, 2 for a bad command line, 77 when no GPU is visible; a call that fails ends the job
// with MPI_Abort(1).

#include <multigpu/comm.hpp>
#include <multigpu/comm/mpi_communicator.hpp>
#include <multigpu/team/team_mdarray.hpp>

#include <mpi.h>

#include "require_gpu.hpp"
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

namespace mg = multigpu;

struct jacobi_sweep {
  __device__ double operator()(const mg::stencil_accessor<double, 2>& u) const {
    return 0.25 * (((u(-1, 0) + u(1, 0)) + u(0, -1)) + u(0, 1));
  }
};
struct squared_change {
  __host__ __device__ double operator()(double a, double b) const { return (a - b) * (a - b); }
};
struct plus {
  __host__ __device__ double operator()(double a, double b) const { return a + b; }
};

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int slots = 1;
  std::size_t rows = 300, cols = 200;
  int iterations = 2000, every = 50;
  double tolerance = 1e-6;
  CLI::App app(
      "2-D Jacobi iteration for Laplace's equation on a team_mdarray over MPI ranks, checked against the "
      "host on every rank.",
      "mpi_jacobi2d");
  app.add_option("--slots", slots, "slots of its GPU per rank")->capture_default_str();
  app.add_option("--rows", rows, "rows (u = 1 beyond the first and the last)")->capture_default_str();
  app.add_option("--cols", cols, "columns (u = 0 beyond the first and the last)")->capture_default_str();
  app.add_option("--iterations", iterations, "Jacobi sweeps at most")->capture_default_str();
  app.add_option("--check-every", every, "sweeps between two reductions of the residual")->capture_default_str();
  app.add_option("--tolerance", tolerance, "residual below which the sweeps stop (converged)")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e) == 0 ? 0 : 2;
    MPI_Finalize();
    return status;
  }
  if (rows == 0 || cols == 0 || every <= 0 || slots <= 0) {
    std::fprintf(stderr, "mpi_jacobi2d: rows, cols, --check-every and --slots must be positive\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  try {
    const mg::launch_info me = mg::mpi_bootstrap();
    if (mg::visible_device_count() == 0) {
      if (me.rank == 0) (void)examples::require_gpu("mpi_jacobi2d");
      MPI_Finalize();
      return 77;
    }
    const int device = mg::launch_device(me);
    mg::team team(std::make_shared<mg::mpi_communicator>(MPI_COMM_WORLD));
    mg::device_group local(std::vector<int>(static_cast<std::size_t>(slots), device));

    mg::team_mdarray_options<double, 2> options;
    options.halo = {1, 1};
    options.boundaries = {{{mg::boundary_kind::fixed, 1.0}, {mg::boundary_kind::fixed, 0.0}}};
    mg::team_mdarray<double, 2> u(team, {rows, cols}, 0.0, local, options);
    mg::team_mdarray<double, 2> next(team, {rows, cols}, 0.0, local, u.options());
    mg::team_mdarray<double, 2> change(team, {rows, cols}, 0.0, local, u.options());
    const double tolerance_squared = tolerance * tolerance;
    double residual2 = 0;
    int done = 0;
    for (int it = 1; it <= iterations; ++it) {
      mg::stencil_transform(u, next, jacobi_sweep{});
      std::swap(u, next);
      done = it;
      if (it % every == 0) {
        mg::transform(u, next, change, squared_change{});
        residual2 = mg::reduce(change, 0.0, plus{});  // the same value on every rank: all stop together
        if (residual2 < tolerance_squared) break;
      }
    }
    const std::vector<double> got = u.to_host();

    // The same on the host, sweep for sweep.
    std::vector<double> h(rows * cols, 0.0), hn(rows * cols);
    const auto at = [&](const std::vector<double>& v, long long i, long long j) {
      if (i < 0 || i >= static_cast<long long>(rows)) return 1.0;
      if (j < 0 || j >= static_cast<long long>(cols)) return 0.0;
      return v[static_cast<std::size_t>(i) * cols + static_cast<std::size_t>(j)];
    };
    for (int it = 1; it <= done; ++it) {
      for (long long i = 0; i < static_cast<long long>(rows); ++i)
        for (long long j = 0; j < static_cast<long long>(cols); ++j)
          hn[static_cast<std::size_t>(i) * cols + static_cast<std::size_t>(j)] =
              0.25 * (((at(h, i - 1, j) + at(h, i + 1, j)) + at(h, i, j - 1)) + at(h, i, j + 1));
      h.swap(hn);
    }
    double worst = 0;
    for (std::size_t k = 0; k < h.size(); ++k) worst = std::max(worst, std::abs(got[k] - h[k]));
    const bool ok = worst <= 1e-9;
    if (me.rank == 0 || !ok)
      std::printf(
          "mpi_jacobi2d: rank %d of %d: %zu x %zu over a %zu x %zu grid of ranks, %d slot(s) each, %d sweeps, "
          "residual %.3g%s: largest difference from the host %.3g: %s\n",
          team.rank(), team.size(), rows, cols, u.options().rank_grid[0], u.options().rank_grid[1], slots, done,
          std::sqrt(residual2), residual2 < tolerance_squared ? " (converged)" : "", worst, ok ? "matches" : "DIFFERS");
    if (!ok) status = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_jacobi2d: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
