// min_element, max_element and equal.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>

namespace {

using namespace test;

template <class T>
class Search : public ::testing::Test {};
TYPED_TEST_SUITE(Search, element_types);

TYPED_TEST(Search, MinAndMaxElementsAreTheFirstInGlobalOrder) {
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

TYPED_TEST(Search, EqualComparesLengthsAndElements) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (const auto& t : shapes())
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{1000003}}) {
        SCOPED_TRACE(testing::Message() << s.name << " vs " << t.name << " n=" << n);
        auto host = random_vector<T>(n);
        mg::distributed_vector<T> a(host, s.group), b(host, t.group);
        EXPECT_TRUE(mg::equal(a, b));
        if (n > 0) {
          b[n - 1] = random_value<T>();
          EXPECT_EQ(mg::equal(a, b), host[n - 1] == T(b[n - 1]));
        }
        mg::distributed_vector<T> shorter(host.begin(), host.end() - (n > 0 ? 1 : 0), t.group);
        if (n > 0) EXPECT_FALSE(mg::equal(a, shorter));
      }
}

}  // namespace
