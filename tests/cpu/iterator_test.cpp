// Iterator arithmetic and concepts. Compiled by the host compiler alone: the container
// header must not need a CUDA compiler.
#include <multigpu/container/distributed_vector.hpp>

#include <gtest/gtest.h>

#include <iterator>
#include <ranges>

namespace mg = multigpu;
using vector_t = mg::distributed_vector<int>;
using iterator = vector_t::iterator;
using const_iterator = vector_t::const_iterator;

static_assert(std::random_access_iterator<iterator>);
static_assert(std::random_access_iterator<const_iterator>);
static_assert(std::sized_sentinel_for<iterator, iterator>);
static_assert(std::convertible_to<iterator, const_iterator>);
static_assert(!std::convertible_to<const_iterator, iterator>);
static_assert(std::indirectly_writable<iterator, int>);
static_assert(!std::indirectly_writable<const_iterator, int>);
static_assert(std::ranges::random_access_range<vector_t>);
static_assert(std::ranges::random_access_range<const vector_t>);
static_assert(std::same_as<std::iter_value_t<iterator>, int>);
static_assert(std::same_as<std::iter_reference_t<const_iterator>, int>);
static_assert(std::same_as<std::common_reference_t<mg::device_reference<int>&&, int&>, int>);
static_assert(mg::segmented_iterator_type<iterator> && mg::segmented_iterator_type<const const_iterator&>);
static_assert(!mg::segmented_iterator_type<int*>);

TEST(Iterator, ArithmeticIsIndexArithmetic) {
  // Arithmetic never touches the vector, so a detached iterator is enough here.
  iterator a(nullptr, 3), b(nullptr, 10);
  EXPECT_EQ(b - a, 7);
  EXPECT_EQ(std::distance(a, b), 7);
  EXPECT_EQ(std::ranges::distance(a, b), 7);
  EXPECT_EQ((a + 7), b);
  EXPECT_EQ((7 + a), b);
  EXPECT_EQ((b - 7), a);
  EXPECT_LT(a, b);
  EXPECT_GE(b, a);
  iterator c = a;
  ++c;
  c += 2;
  --c;
  EXPECT_EQ(c.index(), 5u);
  EXPECT_EQ((c++).index(), 5u);
  EXPECT_EQ(c.index(), 6u);
  const_iterator k = b;
  EXPECT_EQ(k.index(), 10u);
  EXPECT_EQ(k - const_iterator(a), 7);
  auto it = std::next(a, 4);
  EXPECT_EQ(it.index(), 7u);
  std::advance(it, -2);
  EXPECT_EQ(it.index(), 5u);
}
