// Host-only code: the container and the runtime compile without a CUDA compiler.
#include <multigpu/algorithm/copy.hpp>
#include <multigpu/container/distributed_vector.hpp>

#include <cstdio>
#include <vector>

int main() {
  namespace mg = multigpu;
  if (mg::visible_device_count() == 0) return 0;
  std::vector<double> host(100, 1.5);
  mg::distributed_vector<double> v(host);
  return mg::to_vector(v) == host ? 0 : 1;
}
