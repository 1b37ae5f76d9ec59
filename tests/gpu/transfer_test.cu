// Device-to-device copies between vectors on any two groups: same device, peer and
// host-staged routes, whole vectors and subranges.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

namespace {

using namespace test;

template <class T>
class Transfer : public ::testing::Test {};
TYPED_TEST_SUITE(Transfer, element_types);

TYPED_TEST(Transfer, CopyBetweenAnyTwoGroups) {
  using T = TypeParam;
  for (const auto& from : shapes())
    for (const auto& to : shapes())
      for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{5}, std::size_t{1000003}}) {
        SCOPED_TRACE(testing::Message() << from.name << " -> " << to.name << " n=" << n);
        auto host = random_vector<T>(n);
        mg::distributed_vector<T> a(host, from.group);
        mg::distributed_vector<T> b(n, to.group);
        mg::copy(a, b);
        EXPECT_TRUE(same_elements(mg::to_vector(b), host));
        // The source is still intact and reusable.
        EXPECT_TRUE(same_elements(mg::to_vector(a), host));
      }
}

TYPED_TEST(Transfer, LargeCopyAcrossStagedAndDirectRoutes) {
  using T = TypeParam;
  const std::size_t n = (std::size_t{1} << 24) + 5;
  auto host = random_vector<T>(n);
  const auto& direct = shapes()[1].group;
  const auto& staged = shapes()[3].group;
  mg::distributed_vector<T> a(host, direct);
  mg::distributed_vector<T> b(n, staged);
  mg::copy(a, b);
  mg::distributed_vector<T> c(n, shapes()[2].group);
  mg::copy(b, c);
  EXPECT_TRUE(same_elements(mg::to_vector(c), host));
}

TYPED_TEST(Transfer, SubrangeCopiesLandAtTheirOffsets) {
  using T = TypeParam;
  for (const auto& from : shapes())
    for (const auto& to : shapes()) {
      SCOPED_TRACE(testing::Message() << from.name << " -> " << to.name);
      auto src = random_vector<T>(1001);
      auto dst = random_vector<T>(777);
      mg::distributed_vector<T> a(src, from.group);
      mg::distributed_vector<T> b(dst, to.group);
      auto end = mg::copy(a.cbegin() + 100, a.cbegin() + 600, b.begin() + 13);
      EXPECT_EQ(end.index(), 513u);
      std::copy(src.begin() + 100, src.begin() + 600, dst.begin() + 13);
      EXPECT_TRUE(same_elements(mg::to_vector(b), dst));
    }
}

TEST(TransferErrors, MismatchedLengthsNameBothSizes) {
  const auto& g = shapes()[1].group;
  mg::distributed_vector<int> a(10, g), b(12, g);
  try {
    mg::copy(a, b);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("10"), std::string::npos) << what;
    EXPECT_NE(what.find("12"), std::string::npos) << what;
  }
  EXPECT_THROW(mg::copy(a.begin(), a.end(), b.begin() + 5), std::invalid_argument);
  // Both vectors stay usable.
  mg::fill(a, 3);
  EXPECT_EQ(mg::reduce(a), 30);
}

TEST(CrossGroupTransfer, PoolsOfGroupsThatNeverMetAreReachedBeforeAPeerCopy) {
  if (mg::visible_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  // {0} and {1} alone enable no peer access and grant their pools to no other device;
  // all() enables the links process-wide, so copies between {0} and {1} may take them.
  mg::device_group g0({0}), g1({1}), g01({0, 1});
  mg::device_group everything = mg::device_group::all();
  int can01 = 0, can10 = 0;
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can01, 0, 1), cudaSuccess);
  ASSERT_EQ(cudaDeviceCanAccessPeer(&can10, 1, 0), cudaSuccess);
  std::printf("devices 0 and 1: peer access %s\n", can01 || can10 ? "supported" : "not supported (host route)");
  for (std::size_t n : {std::size_t{1}, std::size_t{1009}, std::size_t{1000003}}) {
    SCOPED_TRACE(testing::Message() << "n = " << n);
    std::vector<long long> host(n);
    for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<long long>(i * 2654435761u % 1000003) - 500000;
    mg::distributed_vector<long long> a(host, g0), b(n, g1), c(n, everything), d(n, g0), e(n, g01);
    mg::copy(a, b);  // {0} -> {1}
    mg::copy(b, c);  // {1} -> all()
    mg::copy(c, d);  // all() -> {0}
    mg::copy(b, e);  // {1} -> {0, 1}
    mg::copy(e, a);  // {0, 1} -> {0}
    EXPECT_TRUE(same_elements(mg::to_vector(b), host));
    EXPECT_TRUE(same_elements(mg::to_vector(c), host));
    EXPECT_TRUE(same_elements(mg::to_vector(d), host));
    EXPECT_TRUE(same_elements(mg::to_vector(e), host));
    EXPECT_TRUE(same_elements(mg::to_vector(a), host));
    // Subranges that start in one segment and end in another, both ways.
    if (n > 10) {
      mg::distributed_vector<long long> f(n, 7LL, g1);
      mg::copy(c.cbegin() + 3, c.cend() - 4, f.begin() + 1);
      std::vector<long long> want(n, 7LL);
      std::copy(host.begin() + 3, host.end() - 4, want.begin() + 1);
      EXPECT_TRUE(same_elements(mg::to_vector(f), want));
    }
  }
}

}  // namespace
