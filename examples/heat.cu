// The 1D heat equation by explicit Euler steps over a vector with a halo of one element:
// each step exchanges the segments' boundary elements between neighbouring devices (over
// peer links, or through pinned host memory) and runs one stencil grid per device. The
// result after the steps is compared with the same computation on the host.
//
//   heat [--devices 0,0,0,0] [--n 1000000] [--steps 100] [--periodic]
//
// Exit status: 0 when the result agrees with the host's, 1 when it differs or a call fails,
// 77 when no GPU is visible.

#include <multigpu/multigpu.hpp>

#include "require_gpu.hpp"
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

namespace mg = multigpu;

struct heat_step {
  double alpha;
  bool periodic;
  __host__ __device__ double operator()(const mg::stencil_window<double>& u) const {
    if (!periodic && (u.index() == 0 || u.index() + 1 == u.size())) return u[0];  // fixed ends
    return u[0] + alpha * (u[-1] - 2 * u[0] + u[1]);
  }
};

int main(int argc, char** argv) {
  std::vector<int> devices;
  std::size_t n = 1'000'000;
  int steps = 100;
  bool periodic = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--periodic") {
      periodic = true;
    } else if (i + 1 < argc && arg == "--devices") {
      std::stringstream list(argv[++i]);
      for (std::string id; std::getline(list, id, ',');) devices.push_back(std::stoi(id));
    } else if (i + 1 < argc && arg == "--n") {
      n = std::stoull(argv[++i]);
    } else if (i + 1 < argc && arg == "--steps") {
      steps = std::stoi(argv[++i]);
    }
  }
  if (const int status = examples::require_gpu("heat")) return status;
  try {
    mg::device_group group = devices.empty() ? mg::device_group::all() : mg::device_group(devices);
    const double alpha = 0.25;
    std::vector<double> u0(n);
    for (std::size_t i = 0; i < n; ++i) u0[i] = std::sin(0.001 * static_cast<double>(i)) + (i % 97 == 0 ? 1.0 : 0.0);

    mg::distributed_vector<double> a(n, mg::halo{1, periodic}, group), b(n, mg::halo{1, periodic}, group);
    mg::copy(u0.begin(), u0.end(), a.begin());
    for (int t = 0; t < steps; ++t) {
      mg::stencil_transform(a, b, 1, heat_step{alpha, periodic});
      a.swap(b);
    }
    std::vector<double> got = mg::to_vector(a);

    std::vector<double> u = u0, next(n);
    for (int t = 0; t < steps; ++t) {
      for (std::size_t i = 0; i < n; ++i) {
        if (!periodic && (i == 0 || i + 1 == n)) {
          next[i] = u[i];
          continue;
        }
        next[i] = u[i] + alpha * (u[(i + n - 1) % n] - 2 * u[i] + u[(i + 1) % n]);
      }
      u.swap(next);
    }
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(got[i] - u[i]));
    const bool ok = worst <= 1e-12;
    std::printf("heat: %zu points, %d steps over %zu slot(s)%s: largest difference from the host %.3g: %s\n", n,
                steps, group.size(), periodic ? ", periodic" : "", worst, ok ? "matches" : "DIFFERS");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "heat: %s\n", e.what());
    return 1;
  }
}
