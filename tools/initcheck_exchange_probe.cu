// Does compute-sanitizer initcheck follow stream order from a kernel to a pageable
// device-to-host copy on the same stream, with eight streams busy at once? (In
// tools/initcheck_probe.cu, with one or two streams, it did.) No library code: the pattern
// of a gather's last step and to_vector on eight slots of one GPU.
// - Each of eight streams gets memory from the stream-ordered pool and an answer buffer,
//   filled by a copy on the next stream (ordered by events both ways, as the all-to-all is).
// - A kernel scatters the answers into an output (out[index[j]] = answer[j]; every element
//   is written).
// - On the same stream, a pageable cudaMemcpyAsync copies the output to the host, and the
//   host checks every value against the random input.
//   initcheck_exchange_probe ordered        as described
//   initcheck_exchange_probe synchronized   the control: the host waits for each stream
//                                           before its copy
// Prints the rounds and the wrong values; run it under `compute-sanitizer --tool initcheck`.
// Build: nvcc -arch=native -o build-gpu/initcheck_exchange_probe tools/initcheck_exchange_probe.cu
#include "probe_check.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

__global__ void scatter(const double* answer, const unsigned long long* index, std::size_t n, double* out) {
  const std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (j < n) out[index[j]] = answer[j];
}

int main(int argc, char** argv) {
  const bool synchronized = argc > 1 && std::strcmp(argv[1], "synchronized") == 0;
  constexpr int slots = 8;
  constexpr std::size_t n = 168;  // doubles per segment: 1344 bytes, as in the gather test
  constexpr int rounds = 100;
  std::mt19937_64 rng(20261203);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  cudaStream_t streams[slots];
  for (auto& s : streams) CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t sent[slots];
  for (auto& e : sent) CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  std::size_t wrong = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<double> input(n * slots);
    for (auto& x : input) x = value(rng);
    std::vector<unsigned long long> index(n * slots);
    for (int s = 0; s < slots; ++s) {
      std::iota(index.begin() + s * n, index.begin() + (s + 1) * n, 0ull);
      std::shuffle(index.begin() + s * n, index.begin() + (s + 1) * n, rng);
    }
    double* staged[slots];
    double* answer[slots];
    double* out[slots];
    unsigned long long* where[slots];
    // Slot s + 1 holds slot s's values and sends them over, on its own stream.
    for (int s = 0; s < slots; ++s) {
      const int from = (s + 1) % slots;
      CHECK(cudaMallocAsync(&staged[s], n * sizeof(double), streams[from]));
      CHECK(
          cudaMemcpyAsync(staged[s], input.data() + s * n, n * sizeof(double), cudaMemcpyHostToDevice, streams[from]));
      CHECK(cudaMallocAsync(&answer[s], n * sizeof(double), streams[s]));
      CHECK(cudaMallocAsync(&out[s], n * sizeof(double), streams[s]));
      CHECK(cudaMallocAsync(&where[s], n * sizeof(unsigned long long), streams[s]));
      CHECK(cudaMemcpyAsync(where[s], index.data() + s * n, n * sizeof(unsigned long long), cudaMemcpyHostToDevice,
                            streams[s]));
      CHECK(cudaEventRecord(sent[s], streams[s]));  // the answer buffer exists before the sender writes it
      CHECK(cudaStreamWaitEvent(streams[from], sent[s]));
      CHECK(cudaMemcpyAsync(answer[s], staged[s], n * sizeof(double), cudaMemcpyDeviceToDevice, streams[from]));
      CHECK(cudaEventRecord(sent[s], streams[from]));
      CHECK(cudaStreamWaitEvent(streams[s], sent[s]));
    }
    for (int s = 0; s < slots; ++s) {
      scatter<<<1, 256, 0, streams[s]>>>(answer[s], where[s], n, out[s]);
      CHECK(cudaGetLastError());
    }
    std::vector<double> host(n * slots);
    for (int s = 0; s < slots; ++s) {
      if (synchronized) CHECK(cudaStreamSynchronize(streams[s]));
      CHECK(cudaMemcpyAsync(host.data() + s * n, out[s], n * sizeof(double), cudaMemcpyDeviceToHost, streams[s]));
    }
    for (int s = 0; s < slots; ++s) CHECK(cudaStreamSynchronize(streams[s]));
    for (std::size_t i = 0; i < n * slots; ++i) {
      const std::size_t s = i / n;
      if (host[s * n + index[i]] != input[i]) ++wrong;
    }
    for (int s = 0; s < slots; ++s) {
      CHECK(cudaFreeAsync(staged[s], streams[s]));  // its copy ran on slot s + 1, ordered by the event
      CHECK(cudaFreeAsync(answer[s], streams[s]));
      CHECK(cudaFreeAsync(out[s], streams[s]));
      CHECK(cudaFreeAsync(where[s], streams[s]));
    }
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("initcheck_exchange_probe %s: %d rounds of %d segments, %zu wrong values: %s\n",
              synchronized ? "synchronized" : "ordered", rounds, slots, wrong, wrong ? "DISAGREES" : "agrees");
  return wrong ? 1 : 0;
}
