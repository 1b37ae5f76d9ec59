// A histogram over a distributed_vector: for_each_segment hands every segment to a function
// that bins it with CUB (temporary storage from the slot's pool, on the slot's stream, with
// the slot's device current) into its own row of a slots x bins vector; the rows are merged
// across devices, then checked against a histogram made on the host.
//
//   histogram [--devices 0,0,0] [--n 10000000] [--bins 64]
//
// Exit status: 0 when the histogram agrees with the host's, 1 when it differs or a call
// fails, 77 when no GPU is visible.

#include <multigpu/multigpu.hpp>

#include <cub/device/device_histogram.cuh>

#include "require_gpu.hpp"

#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mg = multigpu;

/// Histogram of values in [lower, upper) into `bins` equal bins, summed over all devices.
std::vector<unsigned> histogram(const mg::distributed_vector<int>& v, int bins, int lower, int upper) {
  // One row of `bins` counters per slot, laid out so that slot s's row is its own segment.
  const std::size_t slots = v.segment_count();
  mg::distributed_vector<unsigned> rows(v.group(), mg::distribution::block(slots * bins, slots));
  mg::fill(rows, 0u);  // the rows of empty segments stay zero
  mg::for_each_segment(v, [&](mg::segment_view<const int> seg) {
    auto row = rows.segment(seg.slot());
    std::size_t bytes = 0;
    MULTIGPU_CUDA_TRY(cub::DeviceHistogram::HistogramEven(nullptr, bytes, seg.data(), row.data(), bins + 1, lower,
                                                          upper, static_cast<long long>(seg.size()), seg.stream()));
    mg::device_buffer<std::byte> temp(bytes, v.group().pool(seg.slot()), seg.stream());
    MULTIGPU_CUDA_TRY(cub::DeviceHistogram::HistogramEven(temp.data(), bytes, seg.data(), row.data(), bins + 1, lower,
                                                          upper, static_cast<long long>(seg.size()), seg.stream()));
  });
  // Merge: gather the rows (slots x bins counters) and add them up.
  std::vector<unsigned> all = mg::to_vector(rows), total(bins, 0);
  for (std::size_t s = 0; s < slots; ++s)
    for (int b = 0; b < bins; ++b) total[b] += all[s * bins + b];
  return total;
}

int main(int argc, char** argv) {
  std::vector<int> devices;
  std::size_t n = 10'000'000;
  int bins = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string arg = argv[i];
    if (arg == "--devices") {
      std::stringstream list(argv[i + 1]);
      for (std::string id; std::getline(list, id, ',');) devices.push_back(std::stoi(id));
    } else if (arg == "--n") {
      n = std::stoull(argv[i + 1]);
    } else if (arg == "--bins") {
      bins = std::stoi(argv[i + 1]);
    }
  }
  if (const int status = examples::require_gpu("histogram")) return status;
  try {
    mg::device_group group = devices.empty() ? mg::device_group::all() : mg::device_group(devices);
    // Sums of three dice scaled to [0, 1024), some samples out of range: integer samples and
    // bins of a whole width make the binning exact, so host and devices must agree.
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> die(-60, 400);
    std::vector<int> host(n);
    for (auto& x : host) x = die(rng) + die(rng) + die(rng);
    mg::distributed_vector<int> v(host, group);
    const int lower = 0, upper = 1024;
    if (upper % bins != 0) throw std::invalid_argument("--bins must divide 1024");
    std::vector<unsigned> got = histogram(v, bins, lower, upper);
    std::vector<unsigned> want(bins, 0);
    for (int x : host)
      if (x >= lower && x < upper) want[(x - lower) / ((upper - lower) / bins)]++;
    unsigned mismatches = 0;
    for (int b = 0; b < bins; ++b) mismatches += got[b] != want[b];
    std::printf("histogram of %zu values over %zu slot(s), %d bins: %s\n", n, group.size(), bins,
                mismatches == 0 ? "matches the host" : "DIFFERS from the host");
    for (int b = bins / 2 - 3; b < bins / 2 + 3; ++b) std::printf("  bin %2d: %u\n", b, got[b]);
    return mismatches == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "histogram: %s\n", e.what());
    return 1;
  }
}
