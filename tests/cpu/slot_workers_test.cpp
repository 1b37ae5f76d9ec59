// The per-slot worker threads of dispatch_policy::worker_threads, on their failure path: a
// worker whose device cannot be selected must fail each step with the CUDA error, never run
// the step on another device. Device 9999 exists on no machine, so this runs without a GPU.
#include <multigpu/core/error.hpp>
#include <multigpu/runtime/detail/slot_workers.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

TEST(SlotWorkers, AWorkerThatCannotSelectItsDeviceFailsEveryStepWithTheCudaError) {
  multigpu::detail::slot_workers workers({9999, 9999});
  std::atomic<int> ran{0};
  const std::vector<multigpu::piece> pieces{{0, 0, 1}, {1, 0, 1}};  // one step on each worker
  const auto step = [&](std::size_t) { ++ran; };
  try {
    workers.run(pieces, step);
    FAIL() << "expected multigpu::cuda_error";
  } catch (const multigpu::cuda_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("cudaSetDevice"), std::string::npos) << what;
    EXPECT_EQ(e.device(), 9999) << what;
    EXPECT_NE(e.code(), cudaSuccess);
  }
  EXPECT_EQ(ran.load(), 0) << "a step ran on a worker without its device";
  // The workers are still there: the next batch fails the same way instead of hanging.
  EXPECT_THROW(workers.run(pieces, step), multigpu::cuda_error);
  EXPECT_EQ(ran.load(), 0);
}

TEST(SlotWorkers, AStepForASlotWithoutAWorkerThrowsAfterTheQueuedStepsFinish) {
  // Slot 5 has no worker: the call throws std::out_of_range, but only once the step already
  // handed to slot 0 has finished with the call's batch, and the workers stay usable.
  multigpu::detail::slot_workers workers({9999, 9999});
  std::atomic<int> ran{0};
  const std::vector<multigpu::piece> pieces{{0, 0, 1}, {5, 0, 1}};
  const auto step = [&](std::size_t) { ++ran; };
  EXPECT_THROW(workers.run(pieces, step), std::out_of_range);
  const std::vector<multigpu::piece> valid{{0, 0, 1}, {1, 0, 1}};
  EXPECT_THROW(workers.run(valid, step), multigpu::cuda_error);
  EXPECT_EQ(ran.load(), 0);
}

}  // namespace
