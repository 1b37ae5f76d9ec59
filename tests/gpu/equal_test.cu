// equal against element-wise comparison on the host: vectors of the same elements on any two
// group shapes, a last element that differs, and a length that differs.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>

namespace {

using namespace test;

template <class T>
class Equal : public ::testing::Test {};
TYPED_TEST_SUITE(Equal, element_types);

TYPED_TEST(Equal, EqualComparesLengthsAndElements) {
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
