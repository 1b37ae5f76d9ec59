// Views of parts of vectors (std::ranges::subrange of segmented iterators, std::views::take,
// counted, drop) in every algorithm that takes [first, last), and segments() as a range,
// against std:: on the host copy.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <numeric>
#include <ranges>

namespace {

using namespace test;

template <class T>
class Ranges : public ::testing::Test {};
using range_types = ::testing::Types<int, double>;
TYPED_TEST_SUITE(Ranges, range_types);

template <class T>
struct plus_one {
  __host__ __device__ T operator()(const T& x) const { return x + T(1); }
};
template <class T>
struct times_three {
  __host__ __device__ void operator()(T& x) const { x = x * T(3); }
};
template <class T>
struct difference {
  __host__ __device__ T operator()(const T& a, const T& b) const { return a - b; }
};
template <class T>
struct is_negative {
  __host__ __device__ bool operator()(const T& x) const { return x < T(0); }
};

/// [n/5, n - n/7): not aligned with any segment boundary for most shapes, empty for n = 0.
std::pair<std::size_t, std::size_t> part(std::size_t n) { return {n / 5, n - n / 7}; }

TYPED_TEST(Ranges, ElementwiseAlgorithmsTakeSubranges) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const auto [a, b] = part(n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> v(host, s.group);
      const auto sub = std::ranges::subrange(v.begin() + a, v.begin() + b);

      const T x = random_value<T>();
      mg::fill(sub, x);
      std::fill(host.begin() + a, host.begin() + b, x);
      ASSERT_TRUE(same_elements(mg::to_vector(v), host));

      mg::iota(sub, T(5));
      std::iota(host.begin() + a, host.begin() + b, T(5));
      ASSERT_TRUE(same_elements(mg::to_vector(v), host));

      mg::for_each(sub, times_three<T>{});
      std::for_each(host.begin() + a, host.begin() + b, times_three<T>{});
      ASSERT_TRUE(same_elements(mg::to_vector(v), host));

      // Unary transform into an iterator of another vector and into a view of it.
      auto out_host = random_vector<T>(n);
      mg::distributed_vector<T> out(out_host, s.group);
      mg::transform(sub, out.begin(), plus_one<T>{});
      std::transform(host.begin() + a, host.begin() + b, out_host.begin(), plus_one<T>{});
      ASSERT_TRUE(same_elements(mg::to_vector(out), out_host));
      mg::transform(sub, std::ranges::subrange(out.begin() + (n - b), out.end() - a), plus_one<T>{});
      std::transform(host.begin() + a, host.begin() + b, out_host.begin() + (n - b), plus_one<T>{});
      ASSERT_TRUE(same_elements(mg::to_vector(out), out_host));

      // Binary transform: both inputs as views (the second one shifted by one), into a
      // vector on another group.
      const std::size_t shift = b - a == n ? 0 : 1;
      const auto shifted = std::views::counted(out.cbegin() + shift, static_cast<std::ptrdiff_t>(b - a));
      auto result_host = random_vector<T>(n);
      mg::distributed_vector<T> result(result_host, mg::device_group({0, 0}));
      mg::transform(sub, shifted, result.begin() + (n - (b - a)), difference<T>{});
      std::transform(host.begin() + a, host.begin() + b, out_host.begin() + shift,
                     result_host.begin() + (n - (b - a)), difference<T>{});
      ASSERT_TRUE(same_elements(mg::to_vector(result), result_host));
    }
}

TYPED_TEST(Ranges, CopyCountEqualTakeViews) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const auto [a, b] = part(n);
      auto host = random_vector<T>(n);
      const mg::distributed_vector<T> v(host, s.group);
      const auto sub = std::ranges::subrange(v.begin() + a, v.begin() + b);

      // To the host, to another vector on a one-slot group, and between views.
      std::vector<T> gathered(b - a);
      EXPECT_EQ(mg::copy(sub, gathered.begin()), gathered.end());
      EXPECT_TRUE(same_elements(gathered, std::vector<T>(host.begin() + a, host.begin() + b)));
      mg::distributed_vector<T> other(n, T(0), mg::device_group({0}));
      EXPECT_EQ(mg::copy(sub, other.begin()).index(), b - a);
      std::vector<T> other_host(n, T(0));
      std::copy(host.begin() + a, host.begin() + b, other_host.begin());
      EXPECT_TRUE(same_elements(mg::to_vector(other), other_host));
      EXPECT_EQ(mg::copy(sub, std::ranges::subrange(other.end() - (b - a), other.end())).index(), n);
      std::copy(host.begin() + a, host.begin() + b, other_host.end() - (b - a));
      EXPECT_TRUE(same_elements(mg::to_vector(other), other_host));

      EXPECT_EQ(mg::count_if(sub, is_negative<T>{}),
                static_cast<std::size_t>(std::count_if(host.begin() + a, host.begin() + b, is_negative<T>{})));
      if (n > 0) {
        const T first = host[a == b ? 0 : a];
        EXPECT_EQ(mg::count(std::views::take(v, static_cast<std::ptrdiff_t>(b)), first),
                  static_cast<std::size_t>(std::count(host.begin(), host.begin() + b, first)));
      }
      EXPECT_EQ(mg::count(std::views::drop(v, static_cast<std::ptrdiff_t>(a)), T(7)),
                static_cast<std::size_t>(std::count(host.begin() + a, host.end(), T(7))));

      EXPECT_TRUE(mg::equal(sub, std::ranges::subrange(other.end() - (b - a), other.end())));
      EXPECT_TRUE(mg::equal(std::views::all(v), std::views::all(v)));
      if (b - a > 1) {
        EXPECT_FALSE(mg::equal(sub, std::ranges::subrange(v.begin() + a, v.begin() + b - 1)));  // lengths differ
        other.write(n - 1, host[b - 1] + T(1));
        EXPECT_FALSE(mg::equal(sub, std::ranges::subrange(other.end() - (b - a), other.end())));
      }
    }
}

TYPED_TEST(Ranges, ReductionsScansAndSearchesTakeViews) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const auto [a, b] = part(n);
      // Small integers: sums are exact in double as well.
      std::vector<T> host(n);
      for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<T>(static_cast<int>((i * 7919) % 23) - 11);
      const mg::distributed_vector<T> v(host, s.group);
      const auto sub = std::ranges::subrange(v.begin() + a, v.begin() + b);
      EXPECT_EQ(mg::reduce(sub), std::accumulate(host.begin() + a, host.begin() + b, T(0)));
      EXPECT_EQ(mg::reduce(sub, T(5), cuda::std::plus<>{}), std::accumulate(host.begin() + a, host.begin() + b, T(5)));
      EXPECT_EQ(mg::reduce_async(sub, T(1), cuda::std::plus<>{}).get(),
                std::accumulate(host.begin() + a, host.begin() + b, T(1)));
      EXPECT_EQ(mg::transform_reduce(sub, T(0), cuda::std::plus<>{}, plus_one<T>{}),
                std::accumulate(host.begin() + a, host.begin() + b, T(0)) + static_cast<T>(b - a));
      EXPECT_EQ(mg::transform_reduce(sub, sub, T(0), cuda::std::plus<>{}, difference<T>{}), T(0));
      if (b > a) {
        const auto lowest = std::min_element(host.begin() + a, host.begin() + b) - host.begin();
        const auto highest = std::max_element(host.begin() + a, host.begin() + b) - host.begin();
        EXPECT_EQ(mg::min_element(sub).index(), static_cast<std::size_t>(lowest));
        EXPECT_EQ(mg::max_element(sub).index(), static_cast<std::size_t>(highest));
      }
      mg::distributed_vector<T> out(n, T(0), s.group);
      std::vector<T> expected(n, T(0));
      mg::inclusive_scan(std::views::take(v, static_cast<std::ptrdiff_t>(b)), out.begin());
      std::inclusive_scan(host.begin(), host.begin() + b, expected.begin());
      EXPECT_TRUE(same_elements(mg::to_vector(out), expected));
      mg::exclusive_scan(sub, out.begin() + a, T(3));
      std::exclusive_scan(host.begin() + a, host.begin() + b, expected.begin() + a, T(3));
      EXPECT_TRUE(same_elements(mg::to_vector(out), expected));
    }
}

TYPED_TEST(Ranges, MismatchedViewLengthsAreRefused) {
  using T = TypeParam;
  mg::distributed_vector<T> v(100, T(1), mg::device_group({0, 0, 0}));
  mg::distributed_vector<T> w(100, T(2), mg::device_group({0, 0}));
  const auto ten = std::ranges::subrange(v.begin(), v.begin() + 10);
  const auto nine = std::ranges::subrange(w.begin(), w.begin() + 9);
  EXPECT_THROW(mg::copy(ten, nine), std::invalid_argument);
  EXPECT_THROW(mg::transform(ten, nine, plus_one<T>{}), std::invalid_argument);
  EXPECT_THROW(mg::transform(ten, nine, w.begin(), difference<T>{}), std::invalid_argument);
  // Nothing was written.
  EXPECT_TRUE(same_elements(mg::to_vector(w), std::vector<T>(100, T(2))));
}

TYPED_TEST(Ranges, SegmentsIsARangeOfViews) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      mg::distributed_vector<T> v(n, s.group);
      auto segments = v.segments();
      ASSERT_EQ(std::ranges::size(segments), s.group.size());
      std::size_t next = 0, slot = 0;
      for (const mg::segment_view<T> seg : segments) {
        EXPECT_EQ(seg.slot(), slot++);
        EXPECT_EQ(seg.offset(), next);
        next += seg.size();
      }
      EXPECT_EQ(next, n);
      const auto& cv = v;
      const auto sizes_of = cv.segments() | std::views::transform([](const auto& seg) { return seg.size(); });
      EXPECT_EQ(static_cast<std::size_t>(std::accumulate(sizes_of.begin(), sizes_of.end(), std::size_t{0})), n);
      EXPECT_EQ(std::ranges::distance(cv.segments()), static_cast<std::ptrdiff_t>(s.group.size()));
      EXPECT_EQ(cv.segments()[s.group.size() - 1].slot(), s.group.size() - 1);
    }
}

}  // namespace
