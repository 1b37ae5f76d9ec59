// 3-D heat equation, explicit in time, with a 7-point stencil on a distributed_mdarray. The
// box is periodic along z (dimension 0), held at 1 on the two y faces (dimension 1) and at 0 on
// the two x faces (dimension 2), and starts at 0 with a hot cube in its middle. Every step is
// one stencil_transform: the tile's inner region computes while the halo faces move, then the
// outer strips. Every k steps the largest change of a step is reduced into a replicated scalar
// that stays on the devices; the stencil reads it and stops updating once it falls below the
// tolerance (steady state), without the host looking. The host reads it once, at the end, and
// repeats the whole computation to compare.
//
//   heat3d [--devices 0,0,0,0] [--nz 40] [--ny 48] [--nx 64] [--steps 800] [--check-every 25]
//          [--tolerance 5e-4]
//
// (--help lists the options.) Exit status: 0 when the result agrees with the host's (and after
// --help), 1 when it differs or a call fails, 2 for a bad command line, 77 when no GPU is visible.

#include <multigpu/mdarray.hpp>
#include <multigpu/multigpu.hpp>

#include "require_gpu.hpp"
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <span>
#include <vector>

namespace mg = multigpu;

constexpr double alpha = 1.0 / 8;  // below 1/6: the explicit step is stable

/// u + alpha * (the six neighbours - 6 u); u itself once the last check found steady state.
struct heat_step {
  mg::replicated_ref<double> largest_change;
  double tolerance;
  __device__ double operator()(const mg::stencil_accessor<double, 3>& u) const {
    const double centre = u(0, 0, 0);
    if (largest_change.get() < tolerance) return centre;
    const double around = ((((u(-1, 0, 0) + u(1, 0, 0)) + u(0, -1, 0)) + u(0, 1, 0)) + u(0, 0, -1)) + u(0, 0, 1);
    return centre + alpha * (around - 6.0 * centre);
  }
};

struct absolute_change {
  __host__ __device__ double operator()(double a, double b) const { return a > b ? a - b : b - a; }
};
struct maximum {
  __host__ __device__ double operator()(double a, double b) const { return a > b ? a : b; }
};

int main(int argc, char** argv) {
  std::vector<int> devices;
  std::size_t nz = 40, ny = 48, nx = 64;
  int steps = 800, every = 25;
  double tolerance = 5e-4;
  CLI::App app("3-D heat equation (7-point stencil) on a distributed_mdarray, checked against the host.", "heat3d");
  app.add_option("--devices", devices, "CUDA ordinals, comma separated; repeats allowed (0,0,0,0). "
                                       "Default: every visible GPU.")
      ->delimiter(',')
      ->type_name("LIST");
  app.add_option("--nz", nz, "extent along z (periodic)")->capture_default_str();
  app.add_option("--ny", ny, "extent along y (faces held at 1)")->capture_default_str();
  app.add_option("--nx", nx, "extent along x (faces held at 0)")->capture_default_str();
  app.add_option("--steps", steps, "time steps")->capture_default_str();
  app.add_option("--check-every", every, "steps between two reductions of the largest change of a step")
      ->capture_default_str();
  app.add_option("--tolerance", tolerance, "largest change of a step below which the updates stop (steady state)")
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (nz == 0 || ny == 0 || nx == 0 || every <= 0 || steps < 0) {
    std::fprintf(stderr, "heat3d: extents and --check-every must be positive, --steps not negative\n");
    return 2;
  }
  if (const int status = examples::require_gpu("heat3d")) return status;
  try {
    // The initial field: 0, and 1 in the middle third of the box in every dimension.
    std::vector<double> start(nz * ny * nx, 0.0);
    const auto hot = [](std::size_t i, std::size_t n) { return 3 * i >= n && 3 * i < 2 * n; };
    for (std::size_t k = 0; k < nz; ++k)
      for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t i = 0; i < nx; ++i)
          if (hot(k, nz) && hot(j, ny) && hot(i, nx)) start[(k * ny + j) * nx + i] = 1.0;

    mg::device_group group = devices.empty() ? mg::device_group::all() : mg::device_group(devices);
    mg::mdarray_options<double, 3> options;
    options.halo = {1, 1, 1};
    options.boundaries = {{{mg::boundary_kind::periodic}, {mg::boundary_kind::fixed, 1.0}, {mg::boundary_kind::fixed, 0.0}}};
    mg::distributed_mdarray<double, 3> u({nz, ny, nx}, std::span<const double>(start), group, options);
    mg::distributed_mdarray<double, 3> next({nz, ny, nx}, 0.0, group, u.options());
    mg::replicated<double> largest_change(group, std::numeric_limits<double>::infinity());  // no check yet
    const auto step = mg::per_slot{[&](std::size_t slot) { return heat_step{largest_change.ref(slot), tolerance}; }};
    for (int s = 1; s <= steps; ++s) {
      mg::stencil_transform(u, next, step);
      if (s % every == 0) {
        // |next - u| reduced straight from the two iterates: no third array.
        mg::transform_reduce_replicated(next, u, 0.0, maximum{}, absolute_change{}, largest_change);
      }
      std::swap(u, next);
    }
    const double device_change = largest_change.get();  // the first host wait
    const std::vector<double> got = u.to_host();

    // The same on the host, step for step.
    std::vector<double> h = start, hn(h.size());
    double host_change = std::numeric_limits<double>::infinity();
    const auto at = [&](long long k, long long j, long long i) {
      if (j < 0 || j >= static_cast<long long>(ny)) return 1.0;  // the y faces: fixed at 1
      if (i < 0 || i >= static_cast<long long>(nx)) return 0.0;  // the x faces: fixed at 0
      const long long z = static_cast<long long>(nz);
      k = (k % z + z) % z;  // periodic along z
      return h[(static_cast<std::size_t>(k) * ny + static_cast<std::size_t>(j)) * nx + static_cast<std::size_t>(i)];
    };
    for (int s = 1; s <= steps; ++s) {
      for (long long k = 0; k < static_cast<long long>(nz); ++k)
        for (long long j = 0; j < static_cast<long long>(ny); ++j)
          for (long long i = 0; i < static_cast<long long>(nx); ++i) {
            const double centre = at(k, j, i);
            const double around =
                ((((at(k - 1, j, i) + at(k + 1, j, i)) + at(k, j - 1, i)) + at(k, j + 1, i)) + at(k, j, i - 1)) + at(k, j, i + 1);
            hn[(static_cast<std::size_t>(k) * ny + static_cast<std::size_t>(j)) * nx + static_cast<std::size_t>(i)] =
                host_change < tolerance ? centre : centre + alpha * (around - 6.0 * centre);
          }
      if (s % every == 0) {
        host_change = 0;
        for (std::size_t x = 0; x < h.size(); ++x) host_change = std::max(host_change, std::abs(hn[x] - h[x]));
      }
      h.swap(hn);
    }
    double worst = 0;
    for (std::size_t x = 0; x < h.size(); ++x) worst = std::max(worst, std::abs(got[x] - h[x]));
    // The device may contract `centre + alpha * (...)` into one fused multiply-add; the host
    // rounds twice. Hence a tolerance, far below the field's scale of 1.
    const bool same_change = device_change == host_change ||  // both infinite when no check ran
                             std::abs(device_change - host_change) <= 1e-9 + 1e-6 * host_change;
    const bool ok = worst <= 1e-9 && same_change;
    std::printf("heat3d: %zu x %zu x %zu over %zu slot(s), %d steps, largest change of a step %.3g every %d (host %.3g)%s: "
                "largest difference from the host %.3g: %s\n",
                nz, ny, nx, group.size(), steps, device_change, every, host_change,
                device_change < tolerance ? ", steady" : "", worst, ok ? "matches" : "DIFFERS");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat3d: %s\n", e.what());
    return 1;
  }
}
