// fill, iota, for_each and transform against std:: on the gathered data.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <numeric>

namespace {

using namespace test;

template <class T>
class Elementwise : public ::testing::Test {};
TYPED_TEST_SUITE(Elementwise, element_types);

template <class T>
struct twice {
  __host__ __device__ T operator()(const T& x) const { return x + x; }
};
template <class T>
struct add_in_place {
  T y;
  __host__ __device__ void operator()(T& x) const { x = x + y; }
};
template <class T>
struct sum_of {
  __host__ __device__ T operator()(const T& a, const T& b) const { return a + b; }
};
/// A transform into another element type.
template <class T>
struct to_double {
  __host__ __device__ double operator()(const T& x) const {
    if constexpr (std::is_same_v<T, vec3>)
      return x.x + 2 * x.y;
    else
      return static_cast<double>(x) * 0.5;
  }
};

TYPED_TEST(Elementwise, FillWholeAndSubrange) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> v(host, s.group);
      const T x = random_value<T>();
      if (n >= 10) {
        mg::fill(v.begin() + 7, v.end() - 3, x);
        std::fill(host.begin() + 7, host.end() - 3, x);
      } else {
        mg::fill(v, x);
        std::fill(host.begin(), host.end(), x);
      }
      EXPECT_TRUE(same_elements(mg::to_vector(v), host));
    }
}

TYPED_TEST(Elementwise, ForEachAndTransform) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto a = random_vector<T>(n), b = random_vector<T>(n);
      mg::distributed_vector<T> da(a, s.group), db(b, s.group), out(n, s.group);
      const T y = random_value<T>();
      mg::for_each(da, add_in_place<T>{y});
      std::for_each(a.begin(), a.end(), add_in_place<T>{y});
      EXPECT_TRUE(same_elements(mg::to_vector(da), a));

      mg::transform(da, out, twice<T>{});
      std::vector<T> want(n);
      std::transform(a.begin(), a.end(), want.begin(), twice<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));

      mg::transform(da, db, out, sum_of<T>{});
      std::transform(a.begin(), a.end(), b.begin(), want.begin(), sum_of<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));

      mg::distributed_vector<double> other(n, s.group);
      mg::transform(da, other, to_double<T>{});
      std::vector<double> want_double(n);
      std::transform(a.begin(), a.end(), want_double.begin(), to_double<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(other), want_double));

      // In place, as std::transform allows.
      mg::transform(da, da, twice<T>{});
      std::transform(a.begin(), a.end(), a.begin(), twice<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(da), a));
    }
}

TYPED_TEST(Elementwise, SubrangesAndUnalignedOperands) {
  using T = TypeParam;
  const std::size_t n = 1000003;
  auto a = random_vector<T>(n), b = random_vector<T>(n);
  for (const auto& s : shapes())
    for (const auto& t : shapes()) {
      SCOPED_TRACE(testing::Message() << s.name << " with " << t.name);
      mg::distributed_vector<T> da(a, s.group), db(b, t.group), out(n, t.group);
      std::vector<T> want = b;
      // Second input and output on another group, at shifted offsets: redistributed first.
      mg::transform(da.cbegin() + 7, da.cend() - 3, db.cbegin() + 5, out.begin() + 2, sum_of<T>{});
      std::vector<T> expect(n, T{});
      std::transform(a.begin() + 7, a.end() - 3, b.begin() + 5, expect.begin() + 2, sum_of<T>{});
      auto got = mg::to_vector(out);
      EXPECT_TRUE(same_elements(std::vector<T>(got.begin() + 2, got.end() - 8),
                                std::vector<T>(expect.begin() + 2, expect.end() - 8)));
      mg::transform(da.cbegin() + 1, da.cend(), db.begin(), twice<T>{});
      std::transform(a.begin() + 1, a.end(), want.begin(), twice<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(db), want));
    }
}

TYPED_TEST(Elementwise, MismatchedLengthsThrowAndLeaveVectorsUsable) {
  using T = TypeParam;
  const auto& g = shapes()[1].group;
  mg::distributed_vector<T> a(10, g), b(11, g);
  try {
    mg::transform(a, b, twice<T>{});
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("10"), std::string::npos) << what;
    EXPECT_NE(what.find("11"), std::string::npos) << what;
  }
  EXPECT_THROW(mg::transform(a, a, b, sum_of<T>{}), std::invalid_argument);
  EXPECT_THROW(mg::transform(a.begin(), a.end(), b.begin() + 2, twice<T>{}), std::invalid_argument);
  EXPECT_THROW(mg::fill(a.end(), a.begin(), T{}), std::invalid_argument);
  mg::distributed_vector<T> c(10, g);
  mg::transform(a, c, twice<T>{});
  EXPECT_TRUE(same_elements(mg::to_vector(c), std::vector<T>(10, T{})));
}

template <class T>
class Iota : public ::testing::Test {};
using arithmetic_types = ::testing::Types<int, long long, float, double>;
TYPED_TEST_SUITE(Iota, arithmetic_types);

TYPED_TEST(Iota, ValuesAreFirstPlusIndex) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      mg::distributed_vector<T> v(n, s.group);
      mg::iota(v, T(-3));
      std::vector<T> want(n);
      if constexpr (std::is_integral_v<T>)
        std::iota(want.begin(), want.end(), T(-3));  // the std:: meaning, for integers
      else
        for (std::size_t i = 0; i < n; ++i) want[i] = T(-3) + static_cast<T>(i);  // thrust::sequence's
      EXPECT_TRUE(same_elements(mg::to_vector(v), want));
    }
}

// Extended lambdas cannot live in gtest's private TestBody: this helper holds them.
void triple_plus_one(const mg::distributed_vector<int>& v, mg::distributed_vector<int>& w) {
  mg::transform(v, w, [] __device__(int x) { return 3 * x; });
  mg::for_each(w, [] __device__(int& x) { x += 1; });
}

TEST(DeviceLambdas, TransformAcceptsExtendedLambdas) {
  const auto& g = shapes()[1].group;
  mg::distributed_vector<int> v(1000, g), w(1000, g);
  mg::iota(v, 0);
  triple_plus_one(v, w);
  EXPECT_EQ(w[999], 2998);
  EXPECT_EQ(mg::reduce(w), 3 * 999 * 1000 / 2 + 1000);
}

}  // namespace
