// inclusive_scan and exclusive_scan: whole vectors, subranges, in place, outputs on other
// groups, non-commutative operators; floating point within tolerances derived from n.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <numeric>

namespace {

using namespace test;

template <class T>
class Scan : public ::testing::Test {};
TYPED_TEST_SUITE(Scan, element_types);

/// Reference prefix sums in a wide type, with the running magnitude for the error bound.
template <class T>
void reference_scan(const std::vector<T>& x, bool exclusive, T init, std::vector<T>& out, std::vector<double>& scale) {
  out.resize(x.size());
  scale.resize(x.size());
  long double sx = 0, sy = 0, sz = 0;
  double m = 0;
  auto add = [&](const T& v) {
    m += magnitude(v);
    if constexpr (std::is_same_v<T, vec3>)
      sx += v.x, sy += v.y, sz += v.z;
    else
      sx += static_cast<long double>(v);
  };
  auto value = [&]() -> T {
    if constexpr (std::is_same_v<T, vec3>)
      return vec3{double(sx), double(sy), double(sz)};
    else
      return static_cast<T>(sx);
  };
  if (exclusive) add(init);
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (exclusive) {
      out[i] = value();
      scale[i] = m;
      add(x[i]);
    } else {
      add(x[i]);
      out[i] = value();
      scale[i] = m;
    }
  }
}

template <class T>
::testing::AssertionResult scans_match(const std::vector<T>& got, const std::vector<T>& want,
                                       const std::vector<double>& scale) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (std::size_t i = 0; i < got.size(); ++i) {
    auto r = near(got[i], want[i], tolerance<T>(got.size(), scale[i]));
    if (!r) return r << " at element " << i << " of " << got.size();
  }
  return ::testing::AssertionSuccess();
}

TYPED_TEST(Scan, InclusiveAndExclusiveMatchTheReference) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> in(host, s.group), out(n, s.group);
      std::vector<T> want;
      std::vector<double> scale;
      mg::inclusive_scan(in, out);
      reference_scan(host, false, T{}, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(out), want, scale));
      const T init = random_value<T>();
      mg::exclusive_scan(in, out, init);
      reference_scan(host, true, init, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(out), want, scale));
      // With an initial value (as std::inclusive_scan(first, last, out, op, init)).
      mg::inclusive_scan(in, out, cuda::std::plus<>{}, init);
      std::vector<T> with_init(host);
      if (!with_init.empty()) with_init[0] = static_cast<T>(init + with_init[0]);
      reference_scan(with_init, false, T{}, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(out), want, scale));
      // In place.
      mg::inclusive_scan(in, in);
      reference_scan(host, false, T{}, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(in), want, scale));
    }
}

// New data for every pair of shapes, so that a read of the input before its upload, or of
// a freed temporary at a reused address, cannot find the right values by chance.
TYPED_TEST(Scan, SubrangesAndOutputsOnOtherGroups) {
  using T = TypeParam;
  const std::size_t n = test::tiny_run() ? 4099 : test::small_run() ? 30011 : 1000003;
  for (const auto& s : shapes())
    for (const auto& t : shapes()) {
      SCOPED_TRACE(testing::Message() << s.name << " -> " << t.name);
      const auto host = random_vector<T>(n);
      mg::distributed_vector<T> in(host, s.group), out(n, t.group);
      std::vector<T> part(host.begin() + 7, host.end() - 3), want;
      std::vector<double> scale;
      mg::inclusive_scan(in.cbegin() + 7, in.cend() - 3, out.begin() + 1);
      reference_scan(part, false, T{}, want, scale);
      auto got = mg::to_vector(out);
      EXPECT_TRUE(scans_match(std::vector<T>(got.begin() + 1, got.begin() + 1 + part.size()), want, scale));
      const T init = random_value<T>();
      mg::exclusive_scan(in.cbegin() + 7, in.cend() - 3, out.begin() + 3, init);
      reference_scan(part, true, init, want, scale);
      got = mg::to_vector(out);
      EXPECT_TRUE(scans_match(std::vector<T>(got.begin() + 3, got.begin() + 3 + part.size()), want, scale));
    }
}

/// Piece sizes around the one-launch scan's tile and limit (detail/local/small_scan.hpp), where
/// its padding, its tile loop and the switch to CUB's scan meet: each piece of a {0} and a
/// {0,0,0} group gets one of them.
template <class T>
std::vector<std::size_t> around_the_small_scan_limit() {
  using shape = mg::detail::small_scan_shape<T>;
  if (tiny_run()) return {shape::tile + 1, shape::limit > 0 ? shape::limit : shape::tile};  // racecheck
  std::vector<std::size_t> n{1, shape::tile - 1, shape::tile, shape::tile + 1};
  if (shape::limit > 0) n.insert(n.end(), {shape::limit - 1, shape::limit, shape::limit + 1});
  return n;
}

TYPED_TEST(Scan, PiecesAroundTheOneLaunchLimitMatchTheReference) {
  using T = TypeParam;
  for (const auto* group : {&shapes()[0].group, &shapes()[1].group})
    for (std::size_t per_piece : around_the_small_scan_limit<T>()) {
      const std::size_t n = per_piece * group->size();
      SCOPED_TRACE(testing::Message() << group->size() << " slot(s), n=" << n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> in(host, *group), out(n, *group);
      std::vector<T> want;
      std::vector<double> scale;
      mg::inclusive_scan(in, out);
      reference_scan(host, false, T{}, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(out), want, scale));
      const T init = random_value<T>();
      mg::exclusive_scan(in, out, init);
      reference_scan(host, true, init, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(out), want, scale));
      // In place, both kinds (every tile is read before it is written).
      mg::distributed_vector<T> again(host, *group);
      mg::exclusive_scan(again, again, init);
      EXPECT_TRUE(scans_match(mg::to_vector(again), want, scale));
      mg::inclusive_scan(in, in);
      reference_scan(host, false, T{}, want, scale);
      EXPECT_TRUE(scans_match(mg::to_vector(in), want, scale));
    }
}

/// 128 bytes: too large for the one-launch scan's block, so every piece goes to CUB's scan.
struct wide {
  long long v[16];
  friend bool operator==(const wide&, const wide&) = default;
};
struct add_wide {
  __host__ __device__ wide operator()(const wide& a, const wide& b) const {
    wide r;
    for (int i = 0; i < 16; ++i) r.v[i] = a.v[i] + b.v[i];
    return r;
  }
};

TEST(ScanWide, ElementsTooLargeForTheOneLaunchScanStillScan) {
  static_assert(mg::detail::small_scan_shape<wide>::limit == 0);
  for (const auto* group : {&shapes()[0].group, &shapes()[1].group})
    for (std::size_t n : {std::size_t{1}, std::size_t{5}, std::size_t{1000}}) {
      SCOPED_TRACE(testing::Message() << group->size() << " slot(s), n=" << n);
      std::vector<wide> host(n);
      for (std::size_t i = 0; i < n; ++i)
        for (int j = 0; j < 16; ++j) host[i].v[j] = static_cast<long long>(i * 16 + j) - 77;
      mg::distributed_vector<wide> in(host, *group), out(n, *group);
      std::vector<wide> want(n);
      mg::inclusive_scan(in, out, add_wide{});
      std::inclusive_scan(host.begin(), host.end(), want.begin(), add_wide{});
      EXPECT_TRUE(mg::to_vector(out) == want);
      const wide init = host[0];
      mg::exclusive_scan(in, out, init, add_wide{});
      std::exclusive_scan(host.begin(), host.end(), want.begin(), init, add_wide{});
      EXPECT_TRUE(mg::to_vector(out) == want);
    }
}

TEST(ScanOrder, NonCommutativeOperatorsScanInOrder) {
  for (const auto& s : shapes()) {
    std::vector<std::size_t> ns = sizes(s.group.size());
    for (std::size_t per_piece : around_the_small_scan_limit<affine>()) ns.push_back(per_piece * s.group.size());
    for (std::size_t n : ns) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<affine>(n);
      mg::distributed_vector<affine> in(host, s.group), out(n, s.group);
      std::vector<affine> want(n);
      mg::inclusive_scan(in, out, compose{});
      std::inclusive_scan(host.begin(), host.end(), want.begin(), compose{});
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));
      const affine init = random_value<affine>();
      mg::exclusive_scan(in, out, init, compose{});
      std::exclusive_scan(host.begin(), host.end(), want.begin(), init, compose{});
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));
      mg::inclusive_scan(in, out, compose{}, init);  // the init comes first
      std::inclusive_scan(host.begin(), host.end(), want.begin(), compose{}, init);
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));
      std::exclusive_scan(host.begin(), host.end(), want.begin(), init, compose{});
      mg::exclusive_scan(in, in, init, compose{});  // in place
      EXPECT_TRUE(same_elements(mg::to_vector(in), want));
    }
  }
}

TEST(ScanErrors, MismatchedLengthsThrow) {
  const auto& g = shapes()[1].group;
  mg::distributed_vector<int> a(10, g), b(7, g);
  EXPECT_THROW(mg::inclusive_scan(a, b), std::invalid_argument);
  EXPECT_THROW(mg::exclusive_scan(a, b, 0), std::invalid_argument);
  EXPECT_THROW(mg::inclusive_scan(a.cbegin(), a.cend(), b.begin()), std::invalid_argument);
  mg::fill(a, 1);
  mg::inclusive_scan(a, a);
  EXPECT_EQ(a[9], 10);
}

}  // namespace
