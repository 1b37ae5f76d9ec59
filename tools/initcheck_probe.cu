// Does compute-sanitizer's initcheck judge a stream-ordered cudaMemcpyAsync by the state of
// its source when the copy is *enqueued*, rather than when it runs? Each case writes a
// buffer with a kernel that starts late (behind a spin kernel) and copies it with
// cudaMemcpyAsync, correctly ordered after the kernel; the data is checked on the host.
// Under `compute-sanitizer --tool initcheck tools/initcheck_probe CASE`, an error report for
// a case whose data checks out is a report about enqueue time, not a defect.
//   same_stream  kernel and copy on one stream
//   event        kernel on stream A, copy on stream B after cudaStreamWaitEvent
//   pool_event   as event, the buffer from a stream-ordered pool (cudaMallocAsync)
//   synced       the host waits for the kernel before enqueuing the copy (the control)
// Build: nvcc -arch=native -o build-gpu/initcheck_probe tools/initcheck_probe.cu
#include "probe_check.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>


__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void fill(int* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = i;
}

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "same_stream";
  const int n = 1 << 16;
  cudaStream_t a, b;
  CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  int *source = nullptr, *target = nullptr;
  const bool pool = std::strcmp(which, "pool_event") == 0;
  if (pool)
    CHECK(cudaMallocAsync(&source, n * sizeof(int), a));
  else
    CHECK(cudaMalloc(&source, n * sizeof(int)));
  CHECK(cudaMalloc(&target, n * sizeof(int)));
  CHECK(cudaMemset(target, 0, n * sizeof(int)));
  int rate_khz = 0;
  CHECK(cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0));
  spin<<<1, 1, 0, a>>>(static_cast<long long>(rate_khz) * 200);  // about 200 ms
  fill<<<(n + 255) / 256, 256, 0, a>>>(source, n);
  CHECK(cudaGetLastError());
  cudaStream_t copier = a;
  if (std::strcmp(which, "event") == 0 || pool) {
    cudaEvent_t written;
    CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
    CHECK(cudaEventRecord(written, a));
    CHECK(cudaStreamWaitEvent(b, written, 0));
    CHECK(cudaEventDestroy(written));
    copier = b;
  } else if (std::strcmp(which, "synced") == 0) {
    CHECK(cudaStreamSynchronize(a));
  } else if (std::strcmp(which, "same_stream") != 0) {
    std::fprintf(stderr, "unknown case %s\n", which);
    return 2;
  }
  CHECK(cudaMemcpyAsync(target, source, n * sizeof(int), cudaMemcpyDeviceToDevice, copier));
  std::vector<int> host(n);
  CHECK(cudaMemcpyAsync(host.data(), target, n * sizeof(int), cudaMemcpyDeviceToHost, copier));
  CHECK(cudaStreamSynchronize(copier));
  int wrong = 0;
  for (int i = 0; i < n; ++i) wrong += host[i] != i;
  std::printf("initcheck_probe %s: %d of %d elements wrong\n", which, wrong, n);
  if (pool) CHECK(cudaFreeAsync(source, a)); else CHECK(cudaFree(source));
  CHECK(cudaFree(target));
  CHECK(cudaDeviceSynchronize());
  return wrong == 0 ? 0 : 1;
}
