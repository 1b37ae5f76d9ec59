// A sharded "find the first index where a predicate holds": every device searches its own
// segment (a CUB reduction of candidate indices, on the slot's stream), and the per-segment
// answers are merged with reduce_segments, which folds them in slot order on one device:
// no hand-written cross-device code. Checked against std::find_if.
//
//   find_first [--devices 0,0,0] [--n 50000000]
//
// Exit status: 0 when every answer agrees with std::find_if, 1 when one differs or a call
// fails, 77 when no GPU is visible.

#include <multigpu/multigpu.hpp>

#include "require_gpu.hpp"
#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace mg = multigpu;

constexpr unsigned long long not_found = std::numeric_limits<unsigned long long>::max();

struct is_target {
  int target;
  __host__ __device__ bool operator()(int x) const { return x == target; }
};

/// Global index of element i of a segment if it matches, else not_found.
struct candidate {
  const int* data;
  unsigned long long offset;
  is_target pred;
  __host__ __device__ unsigned long long operator()(unsigned long long i) const {
    return pred(data[i]) ? offset + i : not_found;
  }
};

struct first_of {
  __host__ __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a < b ? a : b;
  }
};

/// The first global index where pred holds, or v.size() when it holds nowhere.
std::size_t find_first(const mg::distributed_vector<int>& v, is_target pred) {
  const unsigned long long found =
      mg::reduce_segments(v, not_found, first_of{}, [&](mg::segment_view<const int> seg, unsigned long long* out) {
        auto indices = thrust::make_transform_iterator(thrust::counting_iterator<unsigned long long>(0),
                                                       candidate{seg.data(), seg.offset(), pred});
        std::size_t bytes = 0;
        MULTIGPU_CUDA_TRY(cub::DeviceReduce::Reduce(nullptr, bytes, indices, out, seg.size(), first_of{}, not_found,
                                                    seg.stream()));
        mg::device_buffer<std::byte> temp(bytes, v.group().pool(seg.slot()), seg.stream());
        MULTIGPU_CUDA_TRY(cub::DeviceReduce::Reduce(temp.data(), bytes, indices, out, seg.size(), first_of{},
                                                    not_found, seg.stream()));
      });
  return found == not_found ? v.size() : static_cast<std::size_t>(found);
}

int main(int argc, char** argv) {
  std::vector<int> devices;
  std::size_t n = 50'000'000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--devices") {
      std::stringstream list(argv[i + 1]);
      for (std::string id; std::getline(list, id, ',');) devices.push_back(std::stoi(id));
    } else if (arg == "--n") {
      n = std::stoull(argv[i + 1]);
    }
  }
  if (const int status = examples::require_gpu("find_first")) return status;
  try {
    mg::device_group group = devices.empty() ? mg::device_group::all() : mg::device_group(devices);
    std::mt19937 rng(11);
    std::uniform_int_distribution<int> values(0, 1'000'000);
    std::vector<int> host(n);
    for (auto& x : host) x = values(rng);
    mg::distributed_vector<int> v(host, group);
    int failures = 0;
    // Targets that occur early, late, in several segments, and nowhere.
    for (std::size_t probe : {std::size_t{0}, n / 3, n - 1}) {
      for (int target : {host[probe], 1'000'001}) {
        const std::size_t got = find_first(v, is_target{target});
        const std::size_t want =
            static_cast<std::size_t>(std::find_if(host.begin(), host.end(), is_target{target}) - host.begin());
        std::printf("first %d: index %zu (host %zu)\n", target, got, want);
        failures += got != want;
      }
    }
    std::printf("find_first over %zu slot(s): %s\n", group.size(), failures ? "DIFFERS from the host" : "matches the host");
    return failures ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "find_first: %s\n", e.what());
    return 1;
  }
}
