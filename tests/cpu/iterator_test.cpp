// Iterator arithmetic and concepts. Compiled by the host compiler alone: the container
// header must not need a CUDA compiler.
#include <multigpu/algorithm/copy.hpp>
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

// The vector is a sized, common random-access range; so is its const view.
static_assert(std::ranges::sized_range<vector_t> && std::ranges::sized_range<const vector_t>);
static_assert(std::ranges::common_range<vector_t> && std::ranges::common_range<const vector_t>);
static_assert(std::same_as<std::ranges::iterator_t<vector_t>, iterator>);
static_assert(std::same_as<std::ranges::iterator_t<const vector_t>, const_iterator>);
static_assert(std::same_as<std::ranges::range_value_t<vector_t>, int>);
static_assert(std::ranges::viewable_range<vector_t&>);

// segments() is a sized random-access range of segment views (mutable or const).
using segments_t = decltype(std::declval<vector_t&>().segments());
using const_segments_t = decltype(std::declval<const vector_t&>().segments());
static_assert(std::ranges::random_access_range<segments_t> && std::ranges::sized_range<segments_t>);
static_assert(std::ranges::view<segments_t> && std::ranges::view<const_segments_t>);
static_assert(std::ranges::random_access_range<const_segments_t> && std::ranges::sized_range<const_segments_t>);
static_assert(std::same_as<std::ranges::range_value_t<segments_t>, mg::segment_view<int>>);
static_assert(std::same_as<std::ranges::range_value_t<const_segments_t>, mg::segment_view<const int>>);

// Parts of a vector as views: what the algorithms accept in place of [first, last).
using subrange_t = std::ranges::subrange<iterator>;
using const_subrange_t = std::ranges::subrange<const_iterator>;
static_assert(mg::segmented_range<subrange_t> && mg::segmented_range<const_subrange_t>);
static_assert(mg::segmented_range<const subrange_t&>);
static_assert(std::ranges::random_access_range<subrange_t> && std::ranges::sized_range<subrange_t>);
static_assert(mg::segmented_range<decltype(std::views::take(std::declval<vector_t&>(), 3))>);
static_assert(mg::segmented_range<decltype(std::views::drop(std::declval<const vector_t&>(), 3))>);
static_assert(mg::segmented_range<decltype(std::views::counted(std::declval<iterator>(), 3))>);
static_assert(!mg::segmented_range<vector_t> && !mg::segmented_range<vector_t&>);
static_assert(!mg::segmented_range<std::ranges::subrange<int*>>);
static_assert(mg::segmented_range<std::ranges::ref_view<vector_t>>);  // std::views::all(v)

// copy (host-only, so checked here) takes views where it takes [first, last): to a vector, to
// another view, to the host. Writing through a const view does not compile.
static_assert(requires(subrange_t r, const_subrange_t c, std::vector<int>& host) {
  { mg::copy(c, r.begin()) } -> std::same_as<iterator>;
  { mg::copy(c, r) } -> std::same_as<iterator>;
  { mg::copy(r, host.begin()) } -> std::same_as<std::vector<int>::iterator>;
  { mg::copy(std::views::take(std::declval<const vector_t&>(), 2), host.begin()) };
});
template <class From, class To>
concept copyable_to = requires(From from, To to) { mg::copy(from, to); };
static_assert(copyable_to<const_subrange_t, subrange_t> && copyable_to<subrange_t, iterator>);
static_assert(!copyable_to<subrange_t, const_subrange_t> && !copyable_to<subrange_t, const_iterator>);

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

TEST(Iterator, SubrangesAreIndexRanges) {
  iterator a(nullptr, 3), b(nullptr, 10);
  const subrange_t r(a, b);
  EXPECT_EQ(r.size(), 7u);
  EXPECT_EQ(std::ranges::distance(r), 7);
  EXPECT_EQ(r.begin().index(), 3u);
  EXPECT_EQ(r.end().index(), 10u);
  EXPECT_EQ(r.next(2).begin().index(), 5u);
  const auto counted = std::views::counted(a, 4);
  EXPECT_EQ(counted.end().index(), 7u);
}

namespace {
// unpack_range needs only container(), index(), == and <=>: a stand-in for the iterator of a
// vector, which needs a GPU to exist, with the same signed index underneath.
struct fake_vector {
  std::size_t n;
  std::size_t size() const { return n; }
};
struct fake_iterator {
  fake_vector* v;
  std::ptrdiff_t i;
  fake_vector* container() const { return v; }
  std::size_t index() const { return static_cast<std::size_t>(i); }
  friend bool operator==(const fake_iterator&, const fake_iterator&) = default;
  friend auto operator<=>(const fake_iterator& a, const fake_iterator& b) { return a.i <=> b.i; }
};
}  // namespace

TEST(UnpackRange, ARangeThatStartsBeforeTheBeginningIsOutOfRange) {
  fake_vector v{10};
  // begin() - 1 compares before begin() + 3: without its own check the range would start at
  // index 2^64 - 1 and hold 4 elements.
  try {
    (void)mg::detail::unpack_range("fill", fake_iterator{&v, -1}, fake_iterator{&v, 3});
    ADD_FAILURE() << "no exception";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("fill: the range starts at index -1"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)mg::detail::unpack_range("fill", fake_iterator{&v, 12}, fake_iterator{&v, 13}), std::out_of_range);
  const auto [vector, first, count] = mg::detail::unpack_range("fill", fake_iterator{&v, 2}, fake_iterator{&v, 10});
  EXPECT_EQ(vector, &v);
  EXPECT_EQ(first, 2u);
  EXPECT_EQ(count, 8u);
}
