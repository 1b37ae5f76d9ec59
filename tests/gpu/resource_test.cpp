// pool_resource: allocations through cuda::mr::async_resource_ref come from the group's pool
// (its used bytes grow and shrink by them), are device memory on the pool's device, and are
// stream ordered; bad alignments are refused.
// LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE comes from the multigpu::multigpu target.
#include <multigpu/memory/resource.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <vector>

namespace mg = multigpu;

namespace {

using device_ref = cuda::mr::async_resource_ref<cuda::mr::device_accessible>;

void expect_device_memory(const void* p, int device) {
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, p), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attributes.device, device);
}

TEST(PoolResource, StreamOrderedAllocationsComeFromThePool) {
  const mg::device_group group({0, 0});
  mg::pool_resource resource(group.pool(1));
  device_ref ref{resource};
  const std::size_t bytes = std::size_t{3} << 20;
  group.synchronize();
  const std::size_t before = group.pool(1).usage().used_bytes;

  void* p = ref.allocate_async(bytes, 256, group.stream(1));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 256, 0u);
  mg::device_guard guard(group.device(1));
  ASSERT_EQ(cudaMemsetAsync(p, 0x5a, bytes, group.stream(1)), cudaSuccess);
  std::vector<unsigned char> host(bytes);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), p, bytes, cudaMemcpyDeviceToHost, group.stream(1)), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(group.stream(1)), cudaSuccess);
  EXPECT_EQ(host.front(), 0x5a);
  EXPECT_EQ(host.back(), 0x5a);
  expect_device_memory(p, group.device(1));
  EXPECT_GE(group.pool(1).usage().used_bytes, before + bytes);

  ref.deallocate_async(p, bytes, 256, group.stream(1));
  ASSERT_EQ(cudaStreamSynchronize(group.stream(1)), cudaSuccess);
  EXPECT_EQ(group.pool(1).usage().used_bytes, before);  // every byte returned
}

TEST(PoolResource, SynchronousFormsAndEquality) {
  const mg::device_group group({0, 0});
  mg::pool_resource a(group.pool(0)), b(group.pool(1));  // one device: one pool
  EXPECT_TRUE(a == b);
  const std::size_t before = group.pool(0).usage().used_bytes;
  void* p = a.allocate(4096, 64);
  ASSERT_NE(p, nullptr);
  expect_device_memory(p, 0);
  mg::device_guard guard(0);
  ASSERT_EQ(cudaMemset(p, 0, 4096), cudaSuccess);
  a.deallocate(p, 4096, 64);
  EXPECT_EQ(group.pool(0).usage().used_bytes, before);
  if (mg::visible_device_count() > 1) {
    const mg::device_group two({0, 1});
    EXPECT_FALSE(mg::pool_resource(two.pool(0)) == mg::pool_resource(two.pool(1)));
  }
}

TEST(PoolResource, BadAlignmentsAreRefused) {
  const mg::device_group group({0});
  mg::pool_resource resource(group.pool(0));
  const std::size_t before = group.pool(0).usage().used_bytes;
  EXPECT_THROW((void)resource.allocate_async(64, 512, group.stream(0)), std::invalid_argument);
  EXPECT_THROW((void)resource.allocate_async(64, 3, group.stream(0)), std::invalid_argument);
  EXPECT_THROW((void)resource.allocate(64, 0), std::invalid_argument);
  group.synchronize();
  EXPECT_EQ(group.pool(0).usage().used_bytes, before);  // nothing was taken
}

}  // namespace
