// Must not compile (the CTest test device_lambda_reduce): reduce needs a __host__ __device__
// operator, and a __device__-only lambda gets one message that names the fix.
#include <multigpu/multigpu.hpp>

int main() {
  multigpu::distributed_vector<float> v(100, 1.0f);
  return multigpu::reduce(v, 0.0f, [] __device__(float a, float b) { return a + b; }) > 0 ? 0 : 1;
}
