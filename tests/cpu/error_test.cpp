#include <multigpu/core/error.hpp>

#include <gtest/gtest.h>

#include <string>

namespace mg = multigpu;

namespace {
bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST(Errors, CudaTryThrowsWithCallNameAndPlace) {
  try {
    MULTIGPU_CUDA_TRY(cudaErrorInvalidValue);
    FAIL() << "expected multigpu::cuda_error";
  } catch (const mg::cuda_error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.code(), cudaErrorInvalidValue);
    EXPECT_TRUE(contains(what, "cudaErrorInvalidValue")) << what;
    EXPECT_TRUE(contains(what, "error_test.cpp")) << what;
    EXPECT_TRUE(contains(what, "on device")) << what;
  }
}

TEST(Errors, CudaErrorIsARuntimeError) {
  EXPECT_THROW(MULTIGPU_CUDA_TRY(cudaErrorInvalidDevice), std::runtime_error);
}

TEST(Errors, AllocationFailureIsOutOfMemoryAndBadAlloc) {
  EXPECT_THROW(MULTIGPU_CUDA_TRY(cudaErrorMemoryAllocation), mg::out_of_memory);
  EXPECT_THROW(MULTIGPU_CUDA_TRY(cudaErrorMemoryAllocation), std::bad_alloc);
}

TEST(Errors, OutOfMemoryNamesDeviceAndSizes) {
  mg::out_of_memory e(3, 1000, 20, "multigpu: out of memory on device 3: asked for 1000 bytes, 20 free");
  EXPECT_EQ(e.device(), 3);
  EXPECT_EQ(e.requested_bytes(), 1000u);
  EXPECT_EQ(e.free_bytes(), 20u);
  EXPECT_TRUE(contains(e.what(), "device 3"));
}

TEST(Errors, ExpectsThrowsTheRequestedType) {
  EXPECT_THROW(MULTIGPU_EXPECTS(1 == 2, "sizes differ"), std::invalid_argument);
  EXPECT_THROW(MULTIGPU_EXPECTS_AS(false, std::out_of_range, "index 9"), std::out_of_range);
  EXPECT_NO_THROW(MULTIGPU_EXPECTS(true, "never"));
  try {
    MULTIGPU_EXPECTS(false, mg::detail::concat("a has ", 3, " elements, b has ", 4));
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "a has 3 elements, b has 4")) << e.what();
  }
}
