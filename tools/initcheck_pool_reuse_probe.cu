// Does compute-sanitizer initcheck follow a stream-ordered pool handing memory freed on one
// stream to an allocation on another? No library code. On stream A a buffer is written,
// then a kernel spins for about 20 ms, then the buffer is freed. At once, on stream B, a
// buffer of the same size is allocated from the same pool, written whole by a kernel and
// copied to the host (pageable) on B; the host checks every value. When the pool gives B
// the memory A freed, the driver orders B after A's free; initcheck must then count B's
// writes, not the earlier free, as the memory's last word.
//   initcheck_pool_reuse_probe internal   the pool may reuse across streams by inserting a
//                                         dependency (cudaMemPoolReuseAllowInternalDependencies,
//                                         on by default, as in the library's pools)
//   initcheck_pool_reuse_probe event      B waits for an event recorded after A's free (the
//                                         pool follows event dependencies)
//   initcheck_pool_reuse_probe none       the control: reuse across streams switched off
// Prints how many rounds reused A's memory and how many values were wrong; run it under
// `compute-sanitizer --tool initcheck`. A report in a case whose values all agree, absent
// from the control, is initcheck misordering the pool's reuse.
// Build: nvcc -arch=native -o build-gpu/initcheck_pool_reuse_probe tools/initcheck_pool_reuse_probe.cu
#include "probe_check.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void fill(double* x, std::size_t n, double base) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = base + static_cast<double>(i);
}

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "internal";
  const bool event = std::strcmp(which, "event") == 0;
  const bool none = std::strcmp(which, "none") == 0;
  if (!event && !none && std::strcmp(which, "internal") != 0) {
    std::fprintf(stderr, "unknown case %s (internal, event or none)\n", which);
    return 2;
  }
  cudaMemPool_t pool = make_keeping_pool();
  if (none) {
    int off = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &off));
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &off));
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseFollowEventDependencies, &off));
  }
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  cudaEvent_t freed;
  CHECK(cudaEventCreateWithFlags(&freed, cudaEventDisableTiming));
  int rate_khz = 0;
  CHECK(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0));
  constexpr std::size_t n = 168;  // 1344 bytes, as a gather output segment of the tests
  constexpr int rounds = 50;
  int reused = 0;
  std::size_t wrong = 0;
  std::vector<double> host(n);
  for (int round = 0; round < rounds; ++round) {
    double* first = nullptr;
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&first), n * sizeof(double), pool, a));
    fill<<<1, 256, 0, a>>>(first, n, -1.0);
    spin<<<1, 1, 0, a>>>(static_cast<long long>(rate_khz) * 20);  // about 20 ms
    CHECK(cudaGetLastError());
    CHECK(cudaFreeAsync(first, a));
    if (event) {
      CHECK(cudaEventRecord(freed, a));
      CHECK(cudaStreamWaitEvent(b, freed, 0));
    }
    double* second = nullptr;
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&second), n * sizeof(double), pool, b));
    reused += second == first;
    const double base = 1000.0 * (round + 1);
    fill<<<1, 256, 0, b>>>(second, n, base);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyAsync(host.data(), second, n * sizeof(double), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    for (std::size_t i = 0; i < n; ++i) wrong += host[i] != base + static_cast<double>(i);
    CHECK(cudaFreeAsync(second, b));
    CHECK(cudaStreamSynchronize(b));
    CHECK(cudaStreamSynchronize(a));
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("initcheck_pool_reuse_probe %s: %d rounds, %d reused the memory freed on the other stream, "
              "%zu wrong values: %s\n",
              which, rounds, reused, wrong, wrong ? "DISAGREES" : "agrees");
  CHECK(cudaMemPoolDestroy(pool));
  return wrong ? 1 : 0;
}
