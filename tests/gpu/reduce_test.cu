// reduce, reduce_async, transform_reduce, dot, count and count_if against std:: on the
// gathered data, with floating-point tolerances derived from n.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <limits>
#include <numeric>
#include <type_traits>

namespace {

using namespace test;

template <class T>
class Reduce : public ::testing::Test {};
TYPED_TEST_SUITE(Reduce, element_types);

/// The reduction in a wider type for floating point (the reference should not be the
/// inaccurate one), and the sum of magnitudes for the error bound.
template <class T>
std::pair<T, double> reference_sum(const std::vector<T>& x, T init) {
  double scale = magnitude(init);
  for (const T& v : x) scale += magnitude(v);
  if constexpr (std::is_same_v<T, vec3>) {
    long double sx = init.x, sy = init.y, sz = init.z;
    for (const auto& v : x) sx += v.x, sy += v.y, sz += v.z;
    return {vec3{double(sx), double(sy), double(sz)}, scale};
  } else if constexpr (std::is_floating_point_v<T>) {
    long double s = init;
    for (const auto& v : x) s += v;
    return {static_cast<T>(s), scale};
  } else {
    return {std::reduce(x.begin(), x.end(), init), scale};
  }
}

/// A reduction through an extended lambda (defined outside the test body: nvcc does not
/// allow extended lambdas in gtest's private TestBody).
template <class T>
T reduce_with_lambda(const mg::distributed_vector<T>& v, T init) {
  return mg::reduce(v, init, [] __host__ __device__(T a, T b) { return a + b; });
}

template <class T>
struct positive {
  __host__ __device__ bool operator()(const T& x) const { return x > T(0); }
};

template <class T>
struct square {
  __host__ __device__ T operator()(const T& x) const { return x * x; }
};

/// transform_reduce (unary and binary), dot and count_if of da and db (holding a and b)
/// against the host.
template <class T>
void expect_transform_reductions_to_match(const std::vector<T>& a, const std::vector<T>& b,
                                          const mg::distributed_vector<T>& da, const mg::distributed_vector<T>& db) {
  const std::size_t n = a.size();
  std::vector<T> squares(n), products(n);
  std::transform(a.begin(), a.end(), squares.begin(), square<T>{});
  std::transform(a.begin(), a.end(), b.begin(), products.begin(), [](const T& x, const T& y) { return x * y; });
  auto [want_sq, scale_sq] = reference_sum(squares, T{});
  auto [want_dot, scale_dot] = reference_sum(products, T{});
  EXPECT_TRUE(near(mg::transform_reduce(da, T{}, cuda::std::plus<>{}, square<T>{}), want_sq, tolerance<T>(n, scale_sq)));
  EXPECT_TRUE(near(mg::dot(da, db), want_dot, tolerance<T>(n, scale_dot)));
  EXPECT_TRUE(near(mg::transform_reduce(da, db, T{}, cuda::std::plus<>{}, cuda::std::multiplies<>{}), want_dot,
                   tolerance<T>(n, scale_dot)));
  if constexpr (!std::is_same_v<T, vec3>)
    EXPECT_EQ(mg::count_if(da, positive<T>{}),
              static_cast<std::size_t>(std::count_if(a.begin(), a.end(), positive<T>{})));
}

TYPED_TEST(Reduce, SumsMatchTheReference) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> v(host, s.group);
      const T init = random_value<T>();
      auto [want, scale] = reference_sum(host, init);
      EXPECT_TRUE(near(mg::reduce(v, init), want, tolerance<T>(n, scale)));
      auto [want0, scale0] = reference_sum(host, T{});
      EXPECT_TRUE(near(mg::reduce(v), want0, tolerance<T>(n, scale0)));
      // A user operator the library does not know takes the order-keeping path.
      if constexpr (std::is_same_v<T, vec3>)
        EXPECT_TRUE(near(mg::reduce(v, init, vec3_plus{}), want, tolerance<T>(n, scale)));
      else
        EXPECT_TRUE(near(reduce_with_lambda(v, init), want, tolerance<T>(n, scale)));
      auto pending = mg::reduce_async(v, init);
      EXPECT_TRUE(pending.valid());
      EXPECT_TRUE(near(pending.get(), want, tolerance<T>(n, scale)));
      EXPECT_FALSE(pending.valid());
    }
}

TYPED_TEST(Reduce, SubrangesReduceOnlyTheirElements) {
  using T = TypeParam;
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 1000003;
    auto host = random_vector<T>(n);
    mg::distributed_vector<T> v(host, s.group);
    for (auto [first, last] : {std::pair<std::size_t, std::size_t>{7, n - 3}, {0, 1}, {n / 2, n / 2}, {n - 1, n}}) {
      std::vector<T> part(host.begin() + first, host.begin() + last);
      auto [want, scale] = reference_sum(part, T{});
      EXPECT_TRUE(near(mg::reduce(v.cbegin() + first, v.cbegin() + last, T{}), want, tolerance<T>(part.size(), scale)))
          << "[" << first << ", " << last << ")";
    }
  }
}

TYPED_TEST(Reduce, TransformReduceDotAndCount) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto a = random_vector<T>(n), b = random_vector<T>(n);
      mg::distributed_vector<T> da(a, s.group), db(b, s.group);
      expect_transform_reductions_to_match(a, b, da, db);
      const T probe = n > 0 ? a[n / 2] : T{};
      if (n > 3) {
        da[1] = probe;
        a[1] = probe;
      }
      EXPECT_EQ(mg::count(da, probe), static_cast<std::size_t>(std::count(a.begin(), a.end(), probe)));
    }
}

/// The one-launch reduction's shape for a reduction of T by `Op` (detail/local/small_reduce.hpp):
/// its limit is counted in elements of the type it accumulates in.
template <class T, class Op>
using small_reduce_shape_for = mg::detail::small_reduce_shape<mg::detail::small_reduce_accum_t<
    const T*, mg::detail::identity_transform, typename mg::detail::partial_traits<T, Op>::partial_op,
    typename mg::detail::partial_traits<T, Op>::partial>>;

/// Piece sizes around the one-launch reduction's rounds and limit for `Shape`: where threads
/// without an element, the end of the first round, the last round's guard and the switch to
/// CUB's reduction meet.
template <class Shape>
std::vector<std::size_t> around_the_small_reduce_limit() {
  const std::size_t threads = Shape::threads, round = threads * Shape::items;
  if (Shape::limit == 0) return {1, threads + 1};
  if (tiny_run()) return {threads + 1, Shape::limit};  // racecheck
  return {1, threads - 1, threads, threads + 1, threads + round, threads + round + 1, Shape::limit - 1, Shape::limit,
          Shape::limit + 1};
}

/// Runs `call` and returns how many pieces took the one-launch reduction meanwhile.
template <class Call>
std::uint64_t one_launch_pieces(Call&& call) {
  const std::uint64_t before = mg::diagnostics::count(mg::diagnostics::path::one_launch_reduce);
  call();
  return mg::diagnostics::count(mg::diagnostics::path::one_launch_reduce) - before;
}

TYPED_TEST(Reduce, PiecesAroundTheOneLaunchLimitMatchTheReference) {
  using T = TypeParam;
  using traits = mg::detail::partial_traits<T, cuda::std::plus<>>;
  using shape = small_reduce_shape_for<T, cuda::std::plus<>>;
  for (const auto* group : {&shapes()[0].group, &shapes()[1].group})
    for (std::size_t per_piece : around_the_small_reduce_limit<shape>()) {
      const std::size_t n = per_piece * group->size();
      SCOPED_TRACE(testing::Message() << group->size() << " slot(s), n=" << n);
      auto a = random_vector<T>(n), b = random_vector<T>(n);
      mg::distributed_vector<T> da(a, *group), db(b, *group);
      const T init = random_value<T>();
      auto [want, scale] = reference_sum(a, init);
      // One launch per piece exactly when the operator is known commutative and the piece is
      // within the limit; CUB's two launches (or the order-keeping kernel) otherwise.
      const bool one_launch = traits::commutative && shape::limit > 0 && per_piece <= shape::limit;
      EXPECT_EQ(one_launch_pieces([&] { EXPECT_TRUE(near(mg::reduce(da, init), want, tolerance<T>(n, scale))); }),
                one_launch ? group->size() : 0);
      if constexpr (std::is_same_v<T, vec3>) {
        // A partial of 32 bytes (maybe<vec3>): an operator declared commutative.
        using declared = small_reduce_shape_for<vec3, mg::detail::commutative_op<vec3_plus>>;
        EXPECT_EQ(one_launch_pieces([&] {
                    EXPECT_TRUE(near(mg::reduce(da, init, mg::commutative(vec3_plus{})), want, tolerance<T>(n, scale)));
                  }),
                  per_piece <= declared::limit ? group->size() : 0);
      }
      expect_transform_reductions_to_match(a, b, da, db);
    }
}

struct half_of {
  __host__ __device__ float operator()(float x) const { return x * 0.5f; }
};

// transform_reduce(floats, 0, plus, x / 2): CUB accumulates a piece in float (what int + float
// gives) and converts the piece's sum to the int of the result. The one-launch reduction must
// do the same, or a piece's result would depend on which of the two ran: halves of ones summed
// in int are all 0.
TEST(ReduceTypes, SmallPiecesAccumulateInTheTypeCubWould) {
  const auto& g = shapes()[1].group;
  using shape = mg::detail::small_reduce_shape<float>;
  for (std::size_t per_piece : {std::size_t{1001}, shape::limit, shape::limit + 1}) {
    mg::distributed_vector<float> v(per_piece * g.size(), 1.0f, g);
    const int want = static_cast<int>(g.size() * (per_piece / 2));  // each piece's 0.5 * count, truncated
    EXPECT_EQ(mg::transform_reduce(v, 0, cuda::std::plus<>{}, half_of{}), want) << per_piece << " a piece";
  }
}

// New data for every pair of shapes: the pools hand the same addresses back each time, so
// with the same data a read of an operand before its upload, or of a freed temporary, would
// still find the right values.
TYPED_TEST(Reduce, DotOfVectorsOnDifferentGroups) {
  using T = TypeParam;
  const std::size_t n = test::small_run() ? 30011 : 1000003;
  for (const auto& s : shapes())
    for (const auto& t : shapes()) {
      SCOPED_TRACE(testing::Message() << s.name << " . " << t.name);
      const auto a = random_vector<T>(n), b = random_vector<T>(n);
      std::vector<T> products(n);
      std::transform(a.begin(), a.end(), b.begin(), products.begin(), [](const T& x, const T& y) { return x * y; });
      const auto [want, scale] = reference_sum(products, T{});
      mg::distributed_vector<T> da(a, s.group), db(b, t.group);
      EXPECT_TRUE(near(mg::dot(da, db), want, tolerance<T>(n, scale)));
    }
}

TEST(ReduceOrder, NonCommutativeOperatorsCombineInOrder) {
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<affine>(n);
      mg::distributed_vector<affine> v(host, s.group);
      const affine init = random_value<affine>();
      const affine want = std::accumulate(host.begin(), host.end(), init, compose{});
      EXPECT_EQ(mg::reduce(v, init, compose{}), want);
      if (n > 10) {
        const affine part = std::accumulate(host.begin() + 3, host.end() - 4, init, compose{});
        EXPECT_EQ(mg::reduce(v.cbegin() + 3, v.cend() - 4, init, compose{}), part);
      }
    }
}

/// An order-keeping operator on elements of 16 + 8 * Pad bytes: the affine map composes in
/// order, the padding adds up.
template <int Pad>
struct padded_affine {
  affine f;
  std::uint64_t pad[Pad];
};
template <int Pad>
struct padded_compose {
  __host__ __device__ padded_affine<Pad> operator()(const padded_affine<Pad>& l, const padded_affine<Pad>& r) const {
    padded_affine<Pad> out;
    out.f = compose{}(l.f, r.f);
    for (int i = 0; i < Pad; ++i) out.pad[i] = l.pad[i] + r.pad[i];
    return out;
  }
};

template <int Pad>
void expect_wide_elements_to_keep_their_order() {
  for (const auto& s : shapes())
    for (std::size_t n : {std::size_t{1}, s.group.size() + 1, std::size_t{4099}, std::size_t{30011}}) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " bytes=" << sizeof(padded_affine<Pad>));
      std::vector<padded_affine<Pad>> host(n);
      for (std::size_t i = 0; i < n; ++i) {
        host[i].f = random_value<affine>();
        for (int j = 0; j < Pad; ++j) host[i].pad[j] = i + static_cast<std::uint64_t>(j);
      }
      padded_affine<Pad> init{};
      init.f = affine{1, 0};
      const auto want = std::accumulate(host.begin(), host.end(), init, padded_compose<Pad>{});
      mg::distributed_vector<padded_affine<Pad>> v(host, s.group);
      const auto got = mg::reduce(v, init, padded_compose<Pad>{});
      EXPECT_EQ(got.f, want.f);
      EXPECT_EQ(got.pad[0], want.pad[0]);
      EXPECT_EQ(got.pad[Pad - 1], want.pad[Pad - 1]);
    }
}

// Wide elements take the order-keeping kernel too: its shared memory stays within the
// limit (a 64-byte element staged 4 items a thread asked for 72 KiB and did not compile).
TEST(ReduceOrder, WideElementsKeepTheirOrder) {
  expect_wide_elements_to_keep_their_order<6>();    // 64 bytes: a transpose one warp at a time, raking
  expect_wide_elements_to_keep_their_order<9>();    // 88 bytes: the whole block's transpose, warp by warp
  expect_wide_elements_to_keep_their_order<126>();  // 1 KiB: straight into registers, warp by warp
}

TEST(ReduceOrder, CommutativeDeclarationTakesTheFastPath) {
  using mg::diagnostics::path;
  const auto& g = shapes()[2].group;
  auto host = random_vector<vec3>(1000003);
  mg::distributed_vector<vec3> v(host, g);
  auto [want, scale] = reference_sum(host, vec3{});
  const std::uint64_t ordered = mg::diagnostics::count(path::ordered_reduce);
  EXPECT_TRUE(near(mg::reduce(v, vec3{}, mg::commutative(vec3_plus{})), want, tolerance<vec3>(host.size(), scale)));
  EXPECT_EQ(mg::diagnostics::count(path::ordered_reduce), ordered)
      << "a reduction declared commutative ran the order-keeping kernel";
  // The same operator undeclared keeps element order: one order-keeping reduction per segment.
  EXPECT_TRUE(near(mg::reduce(v, vec3{}, vec3_plus{}), want, tolerance<vec3>(host.size(), scale)));
  EXPECT_GT(mg::diagnostics::count(path::ordered_reduce), ordered) << "the counter missed the order-keeping kernel";
}

// As std::reduce, reduce accumulates in the type of init, on every path: the one-launch
// reduction of small pieces, CUB's, and the order-keeping one for operators not known to be
// commutative; async, over iterators, and on every group shape.
struct plain_long_long_plus {  // not known commutative: the order-keeping path
  __host__ __device__ long long operator()(long long a, long long b) const { return a + b; }
};

TEST(ReduceTypes, InitOfAnotherTypeIsTheAccumulator) {
  static_assert(std::is_same_v<decltype(mg::reduce(std::declval<mg::distributed_vector<int>&>(), 0LL)), long long>);
  static_assert(std::is_same_v<decltype(mg::reduce(std::declval<mg::distributed_vector<int>&>(), 0.5)), double>);
  static_assert(
      std::is_same_v<decltype(mg::reduce_async(std::declval<mg::distributed_vector<int>&>(), 0LL)), mg::future<long long>>);
  // 2^21 + 7 ints of 2^20 each (about 2^41 in all, far past int; 4099 of them, past 2^31,
  // under the sanitizers), on one slot, three slots and host staged; then random ints with an
  // init whose fraction an int accumulator would drop.
  const std::size_t big = small_run() ? 4099 : (std::size_t{1} << 21) + 7;
  for (std::size_t which : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
    const auto& sh = shapes()[which];
    SCOPED_TRACE(sh.name);
    {
      std::vector<int> host(big, 1 << 20);
      host[big / 3] = -7;
      mg::distributed_vector<int> v(host, sh.group);
      const long long want = std::reduce(host.begin(), host.end(), 0LL);
      ASSERT_GT(want, std::numeric_limits<int>::max());
      EXPECT_EQ(mg::reduce(v, 0LL), want);
      EXPECT_EQ(mg::reduce(v.begin(), v.end(), 0LL, cuda::std::plus<>{}), want);
      EXPECT_EQ(mg::reduce_async(v, 0LL).get(), want);
      EXPECT_EQ(mg::reduce(v, 0LL, plain_long_long_plus{}), want);
      EXPECT_EQ(mg::reduce(v, 5LL, cuda::maximum<>{}), 1 << 20);
    }
    for (std::size_t n : sizes(sh.group.size(), false)) {
      auto host = random_vector<int>(n);
      mg::distributed_vector<int> v(host, sh.group);
      // Every partial sum of these ints is exact in double, so the order does not matter.
      EXPECT_EQ(mg::reduce(v, 0.5), std::reduce(host.begin(), host.end(), 0.5)) << n << " elements";
      // The operator takes and returns long long, the accumulator is double: 0.25 is dropped
      // by the first step, and returned whole when there is no element.
      EXPECT_EQ(mg::reduce(v.begin(), v.end(), 0.25, plain_long_long_plus{}),
                std::reduce(host.begin(), host.end(), 0.25, [](long long a, long long b) { return a + b; }))
          << n << " elements";
    }
  }
}

TEST(ReduceErrors, MismatchedLengthsAndBadRanges) {
  const auto& g = shapes()[1].group;
  mg::distributed_vector<double> a(10, g), b(9, g);
  EXPECT_THROW(mg::dot(a, b), std::invalid_argument);
  EXPECT_THROW(mg::reduce(a.cend(), a.cbegin(), 0.0), std::invalid_argument);
  EXPECT_THROW(mg::reduce(a.cbegin(), b.cend(), 0.0), std::invalid_argument);
  EXPECT_THROW(mg::reduce(a.cbegin(), a.cend() + 1, 0.0), std::out_of_range);
  EXPECT_EQ(mg::reduce(a, 1.5), 1.5);
}

}  // namespace
