// partition_copy and stable_partition against std::stable_partition on the host, over
// element types, sizes, group shapes and predicates; an output without room writes neither.
#include <multigpu/multigpu.hpp>

#include "select_support.hpp"

#include <algorithm>
#include <iterator>
#include <numeric>
#include <ranges>
#include <stdexcept>
#include <string>

namespace {

using namespace test;
using namespace test::selection;

template <class T>
class Partition : public ::testing::Test {};
TYPED_TEST_SUITE(Partition, select_types);

TYPED_TEST(Partition, PartitionsKeepBothGroupsInOrder) {
  using T = TypeParam;
  const T sentinel = with_key<T>(-7777);
  for_each_select_case<T>(
      std::is_same_v<T, double>,
      [&](const shape& s, std::size_t n, mg::distributed_vector<T>& v, const std::vector<T>& host,
          const above<T>& pred) {
        std::vector<T> want(host);
        const auto want_mid = std::stable_partition(want.begin(), want.end(), pred);

        // partition_copy into two vectors on another group, from index 2.
        const mg::device_group other = s.group.size() == 1 ? s.group : mg::device_group({0, 0});
        mg::distributed_vector<T> yes(n + 2, sentinel, other), no(n + 2, sentinel, s.group);
        auto [yes_end, no_end] = mg::partition_copy(v.cbegin(), v.cend(), yes.begin() + 2, no.begin() + 2, pred);
        const auto passed = static_cast<std::size_t>(want_mid - want.begin());
        EXPECT_EQ(yes_end - yes.begin(), static_cast<std::ptrdiff_t>(2 + passed));
        EXPECT_EQ(no_end - no.begin(), static_cast<std::ptrdiff_t>(2 + n - passed));
        std::vector<T> expect_yes(n + 2, sentinel), expect_no(n + 2, sentinel);
        std::copy(want.begin(), want_mid, expect_yes.begin() + 2);
        std::copy(want_mid, want.end(), expect_no.begin() + 2);
        EXPECT_TRUE(same_elements(mg::to_vector(yes), expect_yes)) << "partition_copy, passing";
        EXPECT_TRUE(same_elements(mg::to_vector(no), expect_no)) << "partition_copy, failing";

        // In place.
        auto mid = mg::stable_partition(v, pred);
        EXPECT_EQ(mid - v.begin(), static_cast<std::ptrdiff_t>(passed));
        EXPECT_TRUE(same_elements(mg::to_vector(v), want)) << "stable_partition";
      });
}

TEST(PartitionErrors, PartitionCopyWithoutRoomWritesNeitherOutput) {
  mg::distributed_vector<int> v(100, mg::device_group({0, 0}));
  mg::iota(v, 0);
  mg::distributed_vector<int> yes(100, -1, mg::device_group({0})), no(10, -1, mg::device_group({0}));
  try {
    mg::partition_copy(v.begin(), v.end(), yes.begin(), no.begin(), above<int>{49.5});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("50 of the 100 elements go to the output of those that fail"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(mg::to_vector(yes), std::vector<int>(100, -1));
  EXPECT_EQ(mg::to_vector(no), std::vector<int>(10, -1));
}

}  // namespace
