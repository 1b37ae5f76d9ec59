// Per-device pools, pinned host memory and the staging pool.
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/memory/pinned_buffer.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mg = multigpu;

TEST(DevicePool, RepeatedAllocationsReuseMemory) {
  mg::device_group g({0});
  mg::device_pool& pool = g.pool(0);
  cudaStream_t s = g.stream(0);
  constexpr std::size_t bytes = 8 << 20;
  { mg::device_buffer<char> warm(bytes, pool, s); }
  g.synchronize();
  pool.reset_peak();
  const auto before = pool.usage();
  for (int i = 0; i < 100; ++i) {
    mg::device_buffer<char> b(bytes, pool, s);
    ASSERT_NE(b.data(), nullptr);
    ASSERT_EQ(cudaMemsetAsync(b.data(), i, bytes, s), cudaSuccess);
  }
  g.synchronize();
  const auto after = pool.usage();
  EXPECT_EQ(after.used_bytes, 0u);
  EXPECT_LE(after.peak_used_bytes, bytes + (2 << 20)) << "100 allocate/free cycles must not stack up";
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes) << "freed memory is kept and reused, not re-mapped";
}

TEST(DevicePool, OutOfMemoryNamesTheDeviceAndSizesAndThePoolStaysUsable) {
  mg::device_group g({0});
  mg::device_pool& pool = g.pool(0);
  std::size_t free_bytes = 0, total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  const std::size_t too_much = total_bytes * 2;
  try {
    mg::device_buffer<char> b(too_much, pool, g.stream(0));
    FAIL() << "an allocation of twice the card's memory succeeded";
  } catch (const mg::out_of_memory& e) {
    EXPECT_EQ(e.device(), 0);
    EXPECT_EQ(e.requested_bytes(), too_much);
    EXPECT_GT(e.free_bytes(), 0u);
    const std::string what = e.what();
    EXPECT_NE(what.find("device 0"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(too_much)), std::string::npos) << what;
  }
  ASSERT_EQ(cudaGetLastError(), cudaSuccess) << "the failure must not linger as the thread's last error";
  mg::device_buffer<char> small(1 << 20, pool, g.stream(0));
  EXPECT_NE(small.data(), nullptr);
  ASSERT_EQ(cudaMemsetAsync(small.data(), 1, 1 << 20, g.stream(0)), cudaSuccess);
  g.synchronize();
}

TEST(DevicePool, ZeroBytesIsNull) {
  mg::device_group g({0});
  mg::device_buffer<int> b(0, g.pool(0), g.stream(0));
  EXPECT_EQ(b.data(), nullptr);
  EXPECT_EQ(b.size(), 0u);
}

TEST(PinnedBuffer, IsPinnedTellsPinnedFromPageable) {
  mg::pinned_buffer pinned(1 << 20);
  std::vector<char> pageable(1 << 20);
  EXPECT_TRUE(mg::is_pinned(pinned.data(), pinned.size()));
  EXPECT_FALSE(mg::is_pinned(pageable.data(), pageable.size()));
  EXPECT_FALSE(mg::is_pinned(nullptr, 0));
}

TEST(StagingPool, BlocksAreReusedAfterTheirFences) {
  mg::device_group g({0, 0});
  auto& staging = mg::detail::resources_of(g).staging();
  void* first = nullptr;
  {
    auto lease = staging.acquire(1000);
    ASSERT_GE(lease.size(), 1000u);
    first = lease.data();
    lease.order_before(g.stream(0));
    ASSERT_EQ(cudaMemsetAsync(lease.data(), 3, lease.size(), g.stream(0)), cudaSuccess);
    lease.fence(0, g.stream(0));
  }
  const std::size_t held = staging.held_bytes();
  auto again = staging.acquire(1000);
  EXPECT_EQ(again.data(), first) << "a returned block is handed out again";
  again.order_before_host();  // the memset above is finished now
  EXPECT_EQ(static_cast<unsigned char*>(again.data())[17], 3);
  EXPECT_EQ(staging.held_bytes(), held);
}
