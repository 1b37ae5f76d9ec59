// Must not compile (the CTest test host_lambda_transform): a host-only lambda handed to
// transform gets one error that names the lambda, its line and __device__.
#include <multigpu/multigpu.hpp>

int main() {
  multigpu::distributed_vector<float> v(100, 1.0f);
  multigpu::transform(v, v, [](float x) { return 2 * x; });
  return 0;
}
