// Does compute-sanitizer initcheck see the writes of a CUDA graph that was changed after
// instantiation? (tools/graph_sanitizer_probe.cu covers updated graphs that read memory
// written by copies; here the updated graph is the writer.) Graph replay fills a new vector
// through an executable graph updated in place (cudaGraphExecUpdate), and a later call reads
// it; the graph tests get initcheck reports of such reads when several sanitizers share the
// GPU.
// Each round takes a buffer from a stream-ordered pool (threshold at the maximum, as
// device_pool's), writes round + 1 into every element through the graph (two halves on two
// capture streams, a fork and a join, as the library captures), then sums it with a plain
// kernel on the launch stream and checks the sum on the host; the value differs per round, so
// a read before the write gives a wrong sum.
//   initcheck_graph_write_probe captured   a graph captured and instantiated for each buffer
//                                          (the control)
//   initcheck_graph_write_probe updated    one executable graph, updated by cudaGraphExecUpdate
//                                          to each round's buffer
//   initcheck_graph_write_probe eager      the same writes as plain kernels (a control)
// Run it under `compute-sanitizer --tool initcheck`: reports in `updated` with every sum right
// and none in the controls mean initcheck does not follow writes by updated graphs.
// Build: nvcc -arch=native -o build-gpu/initcheck_graph_write_probe tools/initcheck_graph_write_probe.cu
#include "probe_check.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__global__ void write_value(int* x, int n, int value) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = value;
}

namespace {

constexpr int n = 1 << 16;
constexpr int threads = 256;
constexpr int half_blocks = n / 2 / threads;

struct streams {
  cudaStream_t launch, origin, side;
  cudaEvent_t fork, join;
};

void enqueue_writes(cudaStream_t first, cudaStream_t second, cudaEvent_t fork, cudaEvent_t join, int* x, int value) {
  CHECK(cudaEventRecord(fork, first));
  CHECK(cudaStreamWaitEvent(second, fork, 0));
  write_value<<<half_blocks, threads, 0, first>>>(x, n / 2, value);
  write_value<<<half_blocks, threads, 0, second>>>(x + n / 2, n / 2, value);
  CHECK(cudaGetLastError());
  CHECK(cudaEventRecord(join, second));
  CHECK(cudaStreamWaitEvent(first, join, 0));
}

cudaGraph_t capture(const streams& s, int* x, int value) {
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(s.origin, cudaStreamCaptureModeRelaxed));
  enqueue_writes(s.origin, s.side, s.fork, s.join, x, value);
  CHECK(cudaStreamEndCapture(s.origin, &graph));
  return graph;
}

}  // namespace

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "updated";
  const bool updated = std::strcmp(which, "updated") == 0;
  const bool eager = std::strcmp(which, "eager") == 0;
  if (!updated && !eager && std::strcmp(which, "captured") != 0) {
    std::fprintf(stderr, "usage: %s captured | updated | eager\n", argv[0]);
    return 2;
  }
  cudaMemPool_t pool = make_keeping_pool();
  streams s{};
  for (cudaStream_t* stream : {&s.launch, &s.origin, &s.side}) CHECK(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking));
  for (cudaEvent_t* e : {&s.fork, &s.join}) CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  unsigned long long* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(unsigned long long)));
  cudaGraphExec_t exec = nullptr;
  int* previous = nullptr;
  const int rounds = 200;
  int wrong = 0, updates = 0;
  for (int round = 0; round < rounds; ++round) {
    const int value = round + 1;
    int* x = nullptr;
    // The previous round's buffer is still alive, so the pool hands out another address.
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&x), n * sizeof(int), pool, s.launch));
    if (eager) {
      enqueue_writes(s.launch, s.side, s.fork, s.join, x, value);
    } else {
      cudaGraph_t graph = capture(s, x, value);
      if (updated && exec != nullptr) {
        cudaGraphExecUpdateResultInfo info{};
        CHECK(cudaGraphExecUpdate(exec, graph, &info));
        ++updates;
      } else {
        if (exec != nullptr) CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphInstantiate(&exec, graph, 0));
      }
      CHECK(cudaGraphDestroy(graph));
      CHECK(cudaGraphLaunch(exec, s.launch));
    }
    CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), s.launch));
    sum<<<n / threads, threads, 0, s.launch>>>(x, n, out);
    CHECK(cudaGetLastError());
    unsigned long long got = 0;
    CHECK(cudaMemcpyAsync(&got, out, sizeof(got), cudaMemcpyDeviceToHost, s.launch));
    if (previous != nullptr) CHECK(cudaFreeAsync(previous, s.launch));
    previous = x;
    CHECK(cudaStreamSynchronize(s.launch));
    wrong += got != static_cast<unsigned long long>(value) * n;
  }
  CHECK(cudaFreeAsync(previous, s.launch));
  CHECK(cudaDeviceSynchronize());
  std::printf("initcheck_graph_write_probe %s: %d rounds, %d graph updates, %d sums wrong: %s\n", which, rounds, updates,
              wrong, wrong == 0 ? "agrees" : "WRONG");
  if (exec != nullptr) CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaFree(out));
  CHECK(cudaMemPoolDestroy(pool));
  return wrong == 0 ? 0 : 1;
}
