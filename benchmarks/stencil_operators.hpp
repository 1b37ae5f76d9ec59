#pragma once
// The stencils the benchmarks time (bench_stencil, bench_comm's team stencil): float 2-D
// 5-point and 3-D 7-point averages.

#include <multigpu/mdarray/stencil.hpp>

namespace bench {

struct five_point {
  __device__ float operator()(const multigpu::stencil_accessor<float, 2>& u) const {
    return 0.25f * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1));
  }
};
struct seven_point {
  __device__ float operator()(const multigpu::stencil_accessor<float, 3>& u) const {
    return (1.0f / 6.0f) * (u(-1, 0, 0) + u(1, 0, 0) + u(0, -1, 0) + u(0, 1, 0) + u(0, 0, -1) + u(0, 0, 1));
  }
};

}  // namespace bench
