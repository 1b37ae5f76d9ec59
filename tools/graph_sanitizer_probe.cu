// Do compute-sanitizer's tools follow a CUDA graph whose kernels were changed after
// instantiation? Graph replay (dispatch_policy::graph) updates an instantiated graph with
// cudaGraphExecUpdate when a call's pointers change, and patches its result kernel with
// cudaGraphExecKernelNodeSetParams. Each case below reads a buffer that was fully written by
// cudaMemcpy from the host, through a graph captured over two streams (a fork and a join, as
// the library's collectives capture), and checks the sum on the host.
//   capture      the graph reads buffer A as captured                      (the control)
//   exec_update  captured on A, then updated by cudaGraphExecUpdate to read buffer B
//   set_params   captured on A, then its kernel node re-pointed at B by
//                cudaGraphExecKernelNodeSetParams
//   realloc      launched on A; A freed (cudaFreeAsync), allocated again at the same address
//                and written with B's values; the same executable graph launched again, as
//                graph replay does when the pools hand a call the same addresses
//   stream_ordered        buffer C allocated (cudaMallocAsync) and written on a third stream;
//                the launch stream waits for an event recorded there after the write; a graph
//                captured on two private streams, as graph replay captures, reads C from the
//                launch stream. For `compute-sanitizer --tool memcheck
//                --track-stream-ordered-races all`: the launch is ordered after the allocation.
//   stream_ordered_eager  the same reads as two plain kernels on the launch stream (its control)
//   free_elsewhere        200 rounds of what a cross-group dot does with its temporary: buffer X
//                from a pool of its own (release threshold at the maximum, as device_pool's),
//                allocated and written on stream W; the launch stream L waits for W and
//                launches the graph reading X (captured again on private streams only when
//                the pool hands another address); W waits for an event recorded on L after
//                the launch and frees X at once, before the host reads the sum from L
//   free_elsewhere_on_launch  the same, X freed on L (a control)
//   free_elsewhere_cross  the same, X freed on a third stream F that waits for the launch, so
//                that the next round's allocation on W takes memory freed on another stream
//                (the pool orders it after F's free by a dependency of its own, as the
//                library's pools do when slots share a device)
//   free_elsewhere_eager      the same, plain kernels on L instead of the graph (a control)
//   free_elsewhere_copied the same as free_elsewhere, but X is written as a cross-group dot writes
//                its temporary: by a device-to-device copy on W from buffer S, which comes from a
//                second pool and is allocated, uploaded and (after W's copy) freed on a fourth
//                stream, as the other group's vector is
// In every free_elsewhere case the values change from round to round, so that a read of X
// before its write, or of memory left by an earlier round, gives a wrong sum.
// Under `compute-sanitizer --tool initcheck build-gpu/graph_sanitizer_probe CASE`, a report or
// a fault in a case whose sum checks out, when the control is clean, is about the tool's view
// of updated graphs, not a defect of the program.
// Build: nvcc -arch=native -o build-gpu/graph_sanitizer_probe tools/graph_sanitizer_probe.cu
#include "probe_check.h"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>


namespace {

constexpr int n = 1 << 16;
constexpr int threads = 256;

// The two halves of `x` are summed on two streams, forked from and joined into `origin`.
cudaGraph_t capture(cudaStream_t origin, cudaStream_t side, cudaEvent_t fork, cudaEvent_t join, const int* x,
                    unsigned long long* out) {
  cudaGraph_t graph = nullptr;
  CHECK(cudaStreamBeginCapture(origin, cudaStreamCaptureModeRelaxed));
  CHECK(cudaEventRecord(fork, origin));
  CHECK(cudaStreamWaitEvent(side, fork, 0));
  sum<<<n / 2 / threads, threads, 0, origin>>>(x, n / 2, out);
  sum<<<n / 2 / threads, threads, 0, side>>>(x + n / 2, n / 2, out);
  CHECK(cudaEventRecord(join, side));
  CHECK(cudaStreamWaitEvent(origin, join, 0));
  CHECK(cudaStreamEndCapture(origin, &graph));
  return graph;
}

}  // namespace

// The free_elsewhere cases; returns the exit code.
int free_elsewhere(const char* which, const std::vector<int>& host, unsigned long long want) {
  const bool graph = std::strcmp(which, "free_elsewhere_eager") != 0;
  const bool on_launch = std::strcmp(which, "free_elsewhere_on_launch") == 0;
  const bool cross = std::strcmp(which, "free_elsewhere_cross") == 0;
  const bool copied = std::strcmp(which, "free_elsewhere_copied") == 0;
  cudaMemPool_t pool = make_keeping_pool(), other_pool = make_keeping_pool();
  cudaStream_t launch_stream, worker, freer, other, capture_origin, capture_side;
  for (cudaStream_t* s : {&launch_stream, &worker, &freer, &other, &capture_origin, &capture_side})
    CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  cudaEvent_t fork, join, written, launched, uploaded, copied_out;
  for (cudaEvent_t* e : {&fork, &join, &written, &launched, &uploaded, &copied_out})
    CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
  unsigned long long* out = nullptr;
  CHECK(cudaMalloc(&out, sizeof(unsigned long long)));
  cudaGraphExec_t exec = nullptr;
  const int* captured = nullptr;
  int rounds = 200, same = 0, wrong = 0;
  std::vector<int> values(host.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < host.size(); ++i) values[i] = host[i] + round;
    const unsigned long long expected = want + static_cast<unsigned long long>(round) * host.size();
    int* x = nullptr;
    CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&x), n * sizeof(int), pool, worker));
    if (copied) {
      int* source = nullptr;
      CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&source), n * sizeof(int), other_pool, other));
      CHECK(cudaMemcpyAsync(source, values.data(), n * sizeof(int), cudaMemcpyHostToDevice, other));
      CHECK(cudaEventRecord(uploaded, other));
      CHECK(cudaStreamWaitEvent(worker, uploaded, 0));
      CHECK(cudaMemcpyAsync(x, source, n * sizeof(int), cudaMemcpyDeviceToDevice, worker));
      CHECK(cudaEventRecord(copied_out, worker));
      CHECK(cudaStreamWaitEvent(other, copied_out, 0));
      CHECK(cudaFreeAsync(source, other));
    } else {
      CHECK(cudaMemcpyAsync(x, values.data(), n * sizeof(int), cudaMemcpyHostToDevice, worker));
    }
    CHECK(cudaEventRecord(written, worker));
    CHECK(cudaStreamWaitEvent(launch_stream, written, 0));
    CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), launch_stream));
    if (graph) {
      if (x == captured) {
        ++same;
      } else {
        cudaGraph_t g = capture(capture_origin, capture_side, fork, join, x, out);
        if (exec == nullptr) {
          CHECK(cudaGraphInstantiate(&exec, g, 0));
        } else {
          cudaGraphExecUpdateResultInfo info{};
          CHECK(cudaGraphExecUpdate(exec, g, &info));
        }
        CHECK(cudaGraphDestroy(g));
        captured = x;
      }
      CHECK(cudaGraphLaunch(exec, launch_stream));
    } else {
      sum<<<n / 2 / threads, threads, 0, launch_stream>>>(x, n / 2, out);
      sum<<<n / 2 / threads, threads, 0, launch_stream>>>(x + n / 2, n / 2, out);
      CHECK(cudaGetLastError());
    }
    if (on_launch) {
      CHECK(cudaFreeAsync(x, launch_stream));
    } else {
      cudaStream_t frees_on = cross ? freer : worker;
      CHECK(cudaEventRecord(launched, launch_stream));
      CHECK(cudaStreamWaitEvent(frees_on, launched, 0));
      CHECK(cudaFreeAsync(x, frees_on));
    }
    unsigned long long got = 0;
    CHECK(cudaMemcpyAsync(&got, out, sizeof(got), cudaMemcpyDeviceToHost, launch_stream));
    CHECK(cudaStreamSynchronize(launch_stream));
    wrong += got != expected;
  }
  CHECK(cudaDeviceSynchronize());
  std::printf("graph_sanitizer_probe %s: %d rounds, %d replayed at the same address, %d sums wrong: %s\n", which,
              rounds, same, wrong, wrong == 0 ? "agrees" : "WRONG");
  if (exec != nullptr) CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaFree(out));
  CHECK(cudaMemPoolDestroy(pool));
  CHECK(cudaMemPoolDestroy(other_pool));
  return wrong == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* which = argc > 1 ? argv[1] : "capture";
  if (std::strcmp(which, "capture") != 0 && std::strcmp(which, "exec_update") != 0 &&
      std::strcmp(which, "set_params") != 0 && std::strcmp(which, "realloc") != 0 &&
      std::strcmp(which, "stream_ordered") != 0 && std::strcmp(which, "stream_ordered_eager") != 0 &&
      std::strcmp(which, "free_elsewhere") != 0 && std::strcmp(which, "free_elsewhere_on_launch") != 0 &&
      std::strcmp(which, "free_elsewhere_eager") != 0 && std::strcmp(which, "free_elsewhere_cross") != 0 &&
      std::strcmp(which, "free_elsewhere_copied") != 0) {
    std::fprintf(stderr,
                 "usage: %s capture | exec_update | set_params | realloc | stream_ordered | stream_ordered_eager |"
                  " free_elsewhere | free_elsewhere_on_launch | free_elsewhere_eager | free_elsewhere_cross |"
                 " free_elsewhere_copied\n",
                 argv[0]);
    return 2;
  }
  cudaStream_t origin, side;
  CHECK(cudaStreamCreateWithFlags(&origin, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  std::vector<int> host_a(n), host_b(n);
  unsigned long long want_a = 0, want_b = 0;
  for (int i = 0; i < n; ++i) {
    host_a[i] = i % 1000;
    host_b[i] = 3 * (i % 777) + 1;
    want_a += host_a[i];
    want_b += host_b[i];
  }
  int *a = nullptr, *b = nullptr;
  unsigned long long* out = nullptr;
  CHECK(cudaMallocAsync(&a, n * sizeof(int), origin));
  CHECK(cudaMallocAsync(&b, n * sizeof(int), origin));
  CHECK(cudaMallocAsync(&out, sizeof(unsigned long long), origin));
  CHECK(cudaMemcpyAsync(a, host_a.data(), n * sizeof(int), cudaMemcpyHostToDevice, origin));
  CHECK(cudaMemcpyAsync(b, host_b.data(), n * sizeof(int), cudaMemcpyHostToDevice, origin));
  CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), origin));
  CHECK(cudaStreamSynchronize(origin));

  cudaGraph_t graph = capture(origin, side, fork, join, a, out);
  cudaGraphExec_t exec = nullptr;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  unsigned long long want = want_a;
  if (std::strcmp(which, "exec_update") == 0) {
    cudaGraph_t other = capture(origin, side, fork, join, b, out);
    cudaGraphExecUpdateResultInfo info{};
    CHECK(cudaGraphExecUpdate(exec, other, &info));
    CHECK(cudaGraphDestroy(other));
    want = want_b;
  } else if (std::strcmp(which, "set_params") == 0) {
    std::size_t count = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    std::vector<cudaGraphNode_t> nodes(count);
    CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    for (cudaGraphNode_t node : nodes) {
      cudaGraphNodeType type{};
      CHECK(cudaGraphNodeGetType(node, &type));
      if (type != cudaGraphNodeTypeKernel) continue;
      cudaKernelNodeParams params{};
      CHECK(cudaGraphKernelNodeGetParams(node, &params));
      const int* x = *static_cast<const int* const*>(params.kernelParams[0]);
      const int* moved = x == a ? b : b + n / 2;
      int half = n / 2;
      void* arguments[] = {&moved, &half, &out};
      params.kernelParams = arguments;
      CHECK(cudaGraphExecKernelNodeSetParams(exec, node, &params));
    }
    want = want_b;
  } else if (std::strcmp(which, "realloc") == 0) {
    CHECK(cudaGraphLaunch(exec, origin));
    CHECK(cudaFreeAsync(a, origin));
    int* again = nullptr;
    CHECK(cudaMallocAsync(&again, n * sizeof(int), origin));
    if (again != a) {
      std::printf("graph_sanitizer_probe realloc: the pool gave another address; nothing to probe\n");
      return 3;
    }
    CHECK(cudaMemcpyAsync(a, host_b.data(), n * sizeof(int), cudaMemcpyHostToDevice, origin));
    CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), origin));
    want = want_b;
  }
  if (std::strncmp(which, "free_elsewhere", 14) == 0) return free_elsewhere(which, host_b, want_b);
  if (std::strncmp(which, "stream_ordered", 14) == 0) {
    cudaStream_t maker, capture_origin, capture_side;
    CHECK(cudaStreamCreateWithFlags(&maker, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&capture_origin, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&capture_side, cudaStreamNonBlocking));
    int* c = nullptr;
    CHECK(cudaMallocAsync(&c, n * sizeof(int), maker));
    CHECK(cudaMemcpyAsync(c, host_b.data(), n * sizeof(int), cudaMemcpyHostToDevice, maker));
    cudaEvent_t ready;
    CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CHECK(cudaEventRecord(ready, maker));
    CHECK(cudaStreamWaitEvent(origin, ready, 0));
    CHECK(cudaMemsetAsync(out, 0, sizeof(unsigned long long), origin));
    cudaGraph_t reading = nullptr;
    cudaGraphExec_t reading_exec = nullptr;
    if (std::strcmp(which, "stream_ordered") == 0) {
      reading = capture(capture_origin, capture_side, fork, join, c, out);
      CHECK(cudaGraphInstantiate(&reading_exec, reading, 0));
      CHECK(cudaGraphLaunch(reading_exec, origin));
    } else {
      sum<<<n / 2 / threads, threads, 0, origin>>>(c, n / 2, out);
      sum<<<n / 2 / threads, threads, 0, origin>>>(c + n / 2, n / 2, out);
      CHECK(cudaGetLastError());
    }
    unsigned long long got = 0;
    CHECK(cudaMemcpyAsync(&got, out, sizeof(got), cudaMemcpyDeviceToHost, origin));
    CHECK(cudaStreamSynchronize(origin));
    std::printf("graph_sanitizer_probe %s: sum %llu, expected %llu: %s\n", which, got, want_b,
                got == want_b ? "agrees" : "WRONG");
    if (reading_exec != nullptr) CHECK(cudaGraphExecDestroy(reading_exec));
    if (reading != nullptr) CHECK(cudaGraphDestroy(reading));
    CHECK(cudaFreeAsync(c, origin));
    CHECK(cudaStreamSynchronize(origin));
    return got == want_b ? 0 : 1;
  }
  CHECK(cudaGraphLaunch(exec, origin));
  unsigned long long got = 0;
  CHECK(cudaMemcpyAsync(&got, out, sizeof(got), cudaMemcpyDeviceToHost, origin));
  CHECK(cudaStreamSynchronize(origin));
  std::printf("graph_sanitizer_probe %s: sum %llu, expected %llu: %s\n", which, got, want,
              got == want ? "agrees" : "WRONG");
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFreeAsync(a, origin));
  CHECK(cudaFreeAsync(b, origin));
  CHECK(cudaFreeAsync(out, origin));
  CHECK(cudaStreamSynchronize(origin));
  return got == want ? 0 : 1;
}
