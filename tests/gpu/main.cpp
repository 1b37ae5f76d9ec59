// Entry point of every GPU test binary: without a visible device the binary says so and
// exits with 77, which CTest reports as skipped.
#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int devices = multigpu::visible_device_count();
  if (devices == 0) {
    std::printf("multigpu: no CUDA device is visible: skipping the GPU tests in %s\n", argv[0]);
    return 77;
  }
  // A diagnostic: MULTIGPU_TEST_STACK_BYTES=N sets every device's stack limit per thread
  // before the tests, to tell whether a kernel with a large frame (the order-keeping
  // reduction of 1 KiB elements takes about 5 KiB) fails under a sanitizer for want of stack.
  if (const char* stack = std::getenv("MULTIGPU_TEST_STACK_BYTES")) {
    const auto bytes = std::strtoull(stack, nullptr, 10);
    for (int device = 0; device < devices; ++device) {
      multigpu::device_guard guard(device);
      MULTIGPU_CUDA_TRY(cudaDeviceSetLimit(cudaLimitStackSize, bytes));
    }
    std::printf("multigpu: stack limit per thread set to %llu bytes\n", bytes);
  }
  return RUN_ALL_TESTS();
}
