// Groups and vectors in static storage. They are made during main, after the library's own
// function-local statics (the pool and peer registries) would have been made, so they are
// destroyed after those at exit: the library must not touch anything that is already gone.
// The program exits 0 when teardown is clean, 77 without a GPU; any crash or error output
// at exit is the failure. Run it under compute-sanitizer memcheck as well.
#include <multigpu/algorithm/copy.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <numeric>
#include <optional>
#include <vector>

namespace mg = multigpu;

namespace {

std::optional<mg::device_group> three_slots;  // three slots on device 0
std::optional<mg::device_group> all_devices;  // every device: peer access when there are two
std::optional<mg::distributed_vector<int>> on_three_slots;
std::optional<mg::distributed_vector<int>> on_all_devices;
std::optional<mg::distributed_vector<long long>> on_default_group;

bool check(const std::vector<int>& got, const std::vector<int>& want, const char* what) {
  if (got == want) return true;
  std::fprintf(stderr, "static_lifetime_test: %s does not hold the data written to it\n", what);
  return false;
}

}  // namespace

int main() {
  if (mg::visible_device_count() == 0) {
    std::printf("multigpu: no CUDA device is visible: skipping static_lifetime_test\n");
    return 77;
  }
  try {
    std::vector<int> data(1009);
    std::iota(data.begin(), data.end(), -17);
    three_slots.emplace(std::vector<int>{0, 0, 0});
    all_devices.emplace(mg::device_group::all());
    on_three_slots.emplace(data, *three_slots);
    on_all_devices.emplace(on_three_slots->size(), *all_devices);
    // A copy between the groups (peers or the host) and a shift in place.
    mg::copy(*on_three_slots, *on_all_devices);
    mg::copy(on_all_devices->cbegin(), on_all_devices->cend() - 1, on_all_devices->begin() + 1);
    std::vector<int> shifted = data;
    std::copy_backward(data.begin(), data.end() - 1, shifted.end());
    if (!check(mg::to_vector(*on_three_slots), data, "the vector on three slots")) return 1;
    if (!check(mg::to_vector(*on_all_devices), shifted, "the vector on every device")) return 1;
    // The default group is a function-local static of the library: made now, after the
    // optional above, so destroyed before it; the vector keeps the group's state alive.
    on_default_group.emplace(100, 5);
    std::vector<long long> fives(100, 5);
    if (mg::to_vector(*on_default_group) != fives) {
      std::fprintf(stderr, "static_lifetime_test: the vector on the default group is wrong\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "static_lifetime_test: %s\n", e.what());
    return 1;
  }
  std::printf("static_lifetime_test: groups and vectors left to static destruction\n");
  return 0;
}
