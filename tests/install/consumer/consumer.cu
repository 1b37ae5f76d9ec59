// Uses device lambdas and CUB-backed algorithms: the exported target must hand over C++20,
// --extended-lambda, the include paths, CCCL and the CUDA runtime.
#include <multigpu/multigpu.hpp>

#include <cstdio>

namespace mg = multigpu;

int main() {
  if (mg::visible_device_count() == 0) {
    std::printf("consumer: built against the installed multigpu; no GPU to run on\n");
    return 0;
  }
  mg::distributed_vector<int> v(1000, mg::device_group({0, 0}));
  mg::iota(v, 1);
  mg::transform(v, v, [] __host__ __device__(int x) { return 2 * x; });
  const int sum = mg::reduce(v);
  std::printf("consumer: sum = %d\n", sum);
  return sum == 1000 * 1001 ? 0 : 1;
}
