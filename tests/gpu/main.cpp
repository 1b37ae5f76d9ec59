// Entry point of every GPU test binary: without a visible device the binary says so and
// exits with 77, which CTest reports as skipped.
#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (multigpu::visible_device_count() == 0) {
    std::printf("multigpu: no CUDA device is visible: skipping the GPU tests in %s\n", argv[0]);
    return 77;
  }
  return RUN_ALL_TESTS();
}
