// Must not compile (tests/install/run.cmake builds it against the installed package): a
// host-only lambda handed to reduce gets one short error naming this file, the lambda's line
// and __device__.
#include <multigpu/multigpu.hpp>

int main() {
  multigpu::distributed_vector<float> v(100, 1.0f);
  return multigpu::reduce(v, 0.0f, [](float a, float b) { return a + b; }) > 0 ? 0 : 1;  // the mistake
}
