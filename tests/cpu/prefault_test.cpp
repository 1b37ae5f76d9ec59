// transfer::prefault_host maps every page of a fresh host allocation before it is written
// (to_vector's new vector), on several threads, and leaves small ones alone.

#include <multigpu/transfer/host_transfer.hpp>

#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <vector>

namespace {

namespace transfer = multigpu::transfer;

/// Pages of [p, p + bytes) that are resident (mapped) now, by mincore.
std::size_t resident_pages(void* p, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in((bytes + page - 1) / page);
  EXPECT_EQ(mincore(p, bytes, in.data()), 0);
  std::size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

/// Fresh anonymous memory, as a large std::vector's allocation is: no page mapped yet.
struct fresh_mapping {
  explicit fresh_mapping(std::size_t b) : bytes(b) {
    data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  ~fresh_mapping() {
    if (data != MAP_FAILED) munmap(data, bytes);
  }
  std::size_t bytes;
  void* data;
};

TEST(PrefaultHost, MapsEveryPageOfALargeFreshAllocation) {
  // Not a multiple of the huge page or of the thread count's share.
  const std::size_t bytes = transfer::prefault_bytes + 3 * 4096 * 1001;
  fresh_mapping m(bytes);
  ASSERT_NE(m.data, MAP_FAILED);
  ASSERT_EQ(resident_pages(m.data, bytes), 0u);
  // A range that starts inside a page, as malloc's large chunks do: its first page counts too.
  transfer::prefault_host(static_cast<char*>(m.data) + 16, bytes - 16);
  EXPECT_EQ(resident_pages(m.data, bytes), (bytes + static_cast<std::size_t>(sysconf(_SC_PAGESIZE)) - 1) /
                                               static_cast<std::size_t>(sysconf(_SC_PAGESIZE)));
}

TEST(PrefaultHost, MapsEveryPageOfAnAlignedAllocation) {
  const std::size_t bytes = transfer::prefault_bytes + 3 * 4096 * 1001;
  fresh_mapping m(bytes);
  ASSERT_NE(m.data, MAP_FAILED);
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const std::size_t pages = (bytes + page - 1) / page;
  ASSERT_EQ(resident_pages(m.data, bytes), 0u);
  transfer::prefault_host(m.data, bytes);
  EXPECT_EQ(resident_pages(m.data, bytes), pages);
  // Still ordinary writable memory.
  static_cast<unsigned char*>(m.data)[bytes - 1] = 7;
  EXPECT_EQ(static_cast<unsigned char*>(m.data)[bytes - 1], 7);
}

TEST(PrefaultHost, LeavesSmallAllocationsAlone) {
  const std::size_t bytes = transfer::prefault_bytes / 2;
  fresh_mapping m(bytes);
  ASSERT_NE(m.data, MAP_FAILED);
  transfer::prefault_host(m.data, bytes);
  EXPECT_EQ(resident_pages(m.data, bytes), 0u);
  transfer::prefault_host(nullptr, transfer::prefault_bytes * 2);  // nothing to touch
}

}  // namespace
