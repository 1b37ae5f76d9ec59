// min_element and max_element against std::min_element and std::max_element: the first of
// equal extremes wins, over element types, sizes and group shapes, and on a subrange.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>

namespace {

using namespace test;

template <class T>
class MinMaxElement : public ::testing::Test {};
TYPED_TEST_SUITE(MinMaxElement, element_types);

TYPED_TEST(MinMaxElement, MinAndMaxElementsAreTheFirstInGlobalOrder) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<T>(n);
      if (n > 20) {  // plant duplicates of the extremes: the first one must win
        auto lo = std::min_element(host.begin(), host.end());
        auto hi = std::max_element(host.begin(), host.end());
        host[n - 2] = *lo;
        host[n - 5] = *hi;
        host[n / 3] = *lo;
      }
      mg::distributed_vector<T> v(host, s.group);
      auto lo = mg::min_element(v);
      auto hi = mg::max_element(v);
      EXPECT_EQ(lo - v.begin(), std::min_element(host.begin(), host.end()) - host.begin());
      EXPECT_EQ(hi - v.begin(), std::max_element(host.begin(), host.end()) - host.begin());
      if (n > 10) {
        auto sub = mg::min_element(v.cbegin() + 5, v.cend() - 2);
        EXPECT_EQ(sub - v.cbegin(), std::min_element(host.begin() + 5, host.end() - 2) - host.begin());
      }
    }
}

}  // namespace
