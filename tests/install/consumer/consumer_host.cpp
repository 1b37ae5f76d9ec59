// Host-only code: the container and the runtime compile without a CUDA compiler.
#include <multigpu/algorithm/copy.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/version.hpp>

#include <cstdio>
#include <vector>

// The installed headers carry the package's version (the consumer asked for 0.3).
static_assert(MULTIGPU_VERSION_MAJOR == 0 && MULTIGPU_VERSION_MINOR == 3, "the installed version.hpp is not 0.3");
static_assert(multigpu::version().minor == MULTIGPU_VERSION_MINOR);

int main() {
  namespace mg = multigpu;
  if (mg::visible_device_count() == 0) return 0;
  std::vector<double> host(100, 1.5);
  mg::distributed_vector<double> v(host);
  return mg::to_vector(v) == host ? 0 : 1;
}
