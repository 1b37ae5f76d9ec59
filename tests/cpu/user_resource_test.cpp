// group_options::resources on its host-only paths: the option checks run before any CUDA
// call (so they hold without a GPU and never touch a resource), and a device_buffer of zero
// elements or of an overflowing count asks its resource for nothing.
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <gtest/gtest.h>

#include <cstddef>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace {

namespace mg = multigpu;

/// Counts every call; a call at all is a failure in these tests.
struct call_counting_resource {
  int calls = 0;
  void* allocate(std::size_t, std::size_t) { ++calls; throw std::bad_alloc(); }
  void deallocate(void*, std::size_t, std::size_t) noexcept { ++calls; }
  void* allocate_async(std::size_t, std::size_t, cuda::stream_ref) { ++calls; throw std::bad_alloc(); }
  void deallocate_async(void*, std::size_t, std::size_t, cuda::stream_ref) noexcept { ++calls; }
  friend bool operator==(const call_counting_resource& a, const call_counting_resource& b) { return &a == &b; }
  friend bool operator!=(const call_counting_resource& a, const call_counting_resource& b) { return &a != &b; }
  friend constexpr void get_property(const call_counting_resource&, cuda::mr::device_accessible) noexcept {}
};

static_assert(std::is_constructible_v<mg::device_resource_ref, call_counting_resource&>);
static_assert(std::is_same_v<decltype(mg::group_options{}.resources), std::vector<mg::device_resource_ref>>);

std::string what_of(const std::vector<int>& devices, const mg::group_options& options) {
  try {
    mg::device_group group(devices, options);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

TEST(UserResources, ACountThatDiffersFromTheSlotsIsRefusedNamingBoth) {
  call_counting_resource r;
  mg::group_options options;
  options.resources = {mg::device_resource_ref{r}};
  const std::string too_few = what_of({0, 0, 0}, options);
  EXPECT_NE(too_few.find("1 resource(s) for 3 slot(s)"), std::string::npos) << too_few;
  options.resources = {mg::device_resource_ref{r}, mg::device_resource_ref{r}, mg::device_resource_ref{r}};
  const std::string too_many = what_of({0, 0}, options);
  EXPECT_NE(too_many.find("3 resource(s) for 2 slot(s)"), std::string::npos) << too_many;
  EXPECT_EQ(r.calls, 0);
}

TEST(UserResources, ResourcesWithManagedStorageAreRefused) {
  call_counting_resource r;
  mg::group_options options;
  options.storage = mg::storage::managed;
  options.resources = {mg::device_resource_ref{r}, mg::device_resource_ref{r}};
  const std::string what = what_of({0, 0}, options);
  EXPECT_NE(what.find("storage::managed"), std::string::npos) << what;
  EXPECT_EQ(r.calls, 0);
}

TEST(UserResources, AnEmptyBufferAsksTheResourceForNothing) {
  call_counting_resource r;
  {
    mg::device_buffer<double> empty(0, mg::device_resource_ref{r}, 0, nullptr);
    EXPECT_EQ(empty.data(), nullptr);
    EXPECT_EQ(empty.size(), 0u);
  }
  EXPECT_EQ(r.calls, 0);
}

TEST(UserResources, AnOverflowingCountIsRefusedBeforeTheResourceIsAsked) {
  call_counting_resource r;
  const std::size_t too_many = std::numeric_limits<std::size_t>::max() / sizeof(double) + 1;
  EXPECT_THROW(mg::device_buffer<double>(too_many, mg::device_resource_ref{r}, 0, nullptr), std::invalid_argument);
  EXPECT_EQ(r.calls, 0);
}

}  // namespace
