// Must not compile (tests/install/run.cmake builds it against the installed package): a
// host-only lambda handed to transform gets one short error naming this file, the lambda's
// line and __device__.
#include <multigpu/multigpu.hpp>

int main() {
  multigpu::distributed_vector<float> v(100, 1.0f);
  multigpu::transform(v, v, [](float x) { return 2 * x; });  // the mistake
  return 0;
}
