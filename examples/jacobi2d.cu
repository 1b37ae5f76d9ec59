// 2-D Jacobi iteration for Laplace's equation on a distributed_mdarray, with a residual check
// every k iterations and no host wait between them. Each iteration is one stencil_transform
// (the interior computes while the halo rows and columns move, then the boundary strips); every
// k iterations the squared change is reduced into a replicated scalar that stays on the devices,
// and the stencil reads it: once it falls below the tolerance the update freezes on the device.
// The host reads the residual once, at the end, and repeats the computation to compare.
//
// The boundary: u = 1 beyond the first and last rows (dimension 0 fixed at 1), u = 0 beyond the
// first and last columns (dimension 1 fixed at 0).
//
//   jacobi2d [--devices 0,0,0,0] [--rows 300] [--cols 200] [--iterations 2000] [--check-every 50]
//            [--tolerance 1e-6]
//
// (--help lists the options.) Exit status: 0 when the result agrees with the host's (and after
// --help), 1 when it differs or a call fails, 2 for a bad command line, 77 when no GPU is visible.

#include <multigpu/mdarray.hpp>
#include <multigpu/multigpu.hpp>

#include "require_gpu.hpp"
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <vector>

namespace mg = multigpu;

/// One Jacobi sweep; a no-op once the last residual check fell below tolerance².
struct jacobi_sweep {
  mg::replicated_ref<double> residual;
  double tolerance_squared;
  __device__ double operator()(const mg::stencil_accessor<double, 2>& u) const {
    if (residual.get() < tolerance_squared) return u(0, 0);
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
  std::vector<int> devices;
  std::size_t rows = 300, cols = 200;
  int iterations = 2000, every = 50;
  double tolerance = 1e-6;
  CLI::App app("2-D Jacobi iteration for Laplace's equation on a distributed_mdarray, checked against the host.",
               "jacobi2d");
  app.add_option("--devices", devices, "CUDA ordinals, comma separated; repeats allowed (0,0,0,0). "
                                       "Default: every visible GPU.")
      ->delimiter(',')
      ->type_name("LIST");
  app.add_option("--rows", rows, "rows (u = 1 beyond the first and the last)")->capture_default_str();
  app.add_option("--cols", cols, "columns (u = 0 beyond the first and the last)")->capture_default_str();
  app.add_option("--iterations", iterations, "Jacobi sweeps")->capture_default_str();
  app.add_option("--check-every", every, "sweeps between two reductions of the residual")->capture_default_str();
  app.add_option("--tolerance", tolerance, "residual below which the sweeps stop (converged)")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (rows == 0 || cols == 0 || every <= 0) {
    std::fprintf(stderr, "jacobi2d: rows, cols and --check-every must be positive\n");
    return 2;
  }
  if (const int status = examples::require_gpu("jacobi2d")) return status;
  try {
    mg::device_group group = devices.empty() ? mg::device_group::all() : mg::device_group(devices);
    mg::mdarray_options<double, 2> options;
    options.halo = {1, 1};
    options.boundaries = {{{mg::boundary_kind::fixed, 1.0}, {mg::boundary_kind::fixed, 0.0}}};
    mg::distributed_mdarray<double, 2> u({rows, cols}, 0.0, group, options);
    mg::distributed_mdarray<double, 2> next({rows, cols}, 0.0, group, u.options());
    mg::distributed_mdarray<double, 2> change({rows, cols}, 0.0, group, u.options());
    const double tolerance_squared = tolerance * tolerance;
    mg::replicated<double> residual(group, std::numeric_limits<double>::infinity());  // above any tolerance until the first check
    const auto sweep = mg::per_slot{[&](std::size_t slot) { return jacobi_sweep{residual.ref(slot), tolerance_squared}; }};
    for (int it = 1; it <= iterations; ++it) {
      mg::stencil_transform(u, next, sweep);
      if (it % every == 0) {
        mg::transform(next, u, change, squared_change{});
        mg::reduce_replicated(change, 0.0, plus{}, residual);
      }
      std::swap(u, next);
    }
    const double device_residual = std::sqrt(residual.get());
    const std::vector<double> got = u.to_host();

    // The same on the host, sweep for sweep.
    std::vector<double> h(rows * cols, 0.0), hn(rows * cols);
    double host_residual2 = std::numeric_limits<double>::infinity();
    const auto at = [&](const std::vector<double>& v, long long i, long long j) {
      if (i < 0 || i >= static_cast<long long>(rows)) return 1.0;
      if (j < 0 || j >= static_cast<long long>(cols)) return 0.0;
      return v[static_cast<std::size_t>(i) * cols + static_cast<std::size_t>(j)];
    };
    for (int it = 1; it <= iterations; ++it) {
      for (long long i = 0; i < static_cast<long long>(rows); ++i)
        for (long long j = 0; j < static_cast<long long>(cols); ++j)
          hn[static_cast<std::size_t>(i) * cols + static_cast<std::size_t>(j)] =
              host_residual2 < tolerance_squared
                  ? at(h, i, j)
                  : 0.25 * (((at(h, i - 1, j) + at(h, i + 1, j)) + at(h, i, j - 1)) + at(h, i, j + 1));
      if (it % every == 0) {
        host_residual2 = 0;
        for (std::size_t k = 0; k < h.size(); ++k) host_residual2 += (hn[k] - h[k]) * (hn[k] - h[k]);
      }
      h.swap(hn);
    }
    double worst = 0;
    for (std::size_t k = 0; k < h.size(); ++k) worst = std::max(worst, std::abs(got[k] - h[k]));
    const bool ok = worst <= 1e-9 && std::abs(device_residual - std::sqrt(host_residual2)) <= 1e-9 + 1e-6 * device_residual;
    std::printf("jacobi2d: %zu x %zu over %zu slot(s), %d iterations, residual %.3g every %d (host %.3g)%s: largest "
                "difference from the host %.3g: %s\n",
                rows, cols, group.size(), iterations, device_residual, every, std::sqrt(host_residual2),
                device_residual < tolerance ? ", converged" : "", worst, ok ? "matches" : "DIFFERS");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jacobi2d: %s\n", e.what());
    return 1;
  }
}
