// distributed_vector: construction, round trips, element access, resize, segments, pools.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <list>
#include <numeric>
#include <ranges>
#include <span>
#include <stdexcept>

namespace {

using namespace test;

template <class T>
class Container : public ::testing::Test {};
TYPED_TEST_SUITE(Container, element_types);

TYPED_TEST(Container, RoundTripsHostData) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size())) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      auto host = random_vector<T>(n);
      mg::distributed_vector<T> v(host, s.group);
      EXPECT_EQ(v.size(), n);
      EXPECT_EQ(v.empty(), n == 0);
      EXPECT_EQ(v.segment_count(), s.group.size());
      EXPECT_TRUE(same_elements(mg::to_vector(v), host));
    }
}

TYPED_TEST(Container, SizeAndValueConstructors) {
  using T = TypeParam;
  const T value = random_value<T>();
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      mg::distributed_vector<T> filled(n, value, s.group);
      EXPECT_TRUE(same_elements(mg::to_vector(filled), std::vector<T>(n, value)));
      mg::distributed_vector<T> zeroed(n, s.group);
      EXPECT_TRUE(same_elements(mg::to_vector(zeroed), std::vector<T>(n, T{})));
    }
}

TYPED_TEST(Container, InitializerListAndNonContiguousRanges) {
  using T = TypeParam;
  const auto& g = shapes()[1].group;
  T a = random_value<T>(), b = random_value<T>(), c = random_value<T>();
  mg::distributed_vector<T> v({a, b, c, a}, g);
  EXPECT_TRUE(same_elements(mg::to_vector(v), std::vector<T>{a, b, c, a}));
  std::list<T> list{c, b, a};
  mg::distributed_vector<T> from_list(list, g);
  EXPECT_TRUE(same_elements(mg::to_vector(from_list), std::vector<T>{c, b, a}));
  auto generated = std::views::iota(0, 1000) | std::views::transform([&](int i) { return i % 2 ? a : b; });
  mg::distributed_vector<T> from_view(generated, g);
  std::vector<T> expected(generated.begin(), generated.end());
  EXPECT_TRUE(same_elements(mg::to_vector(from_view), expected));
}

TYPED_TEST(Container, CopyMoveAssignAndSwapAreDeep) {
  using T = TypeParam;
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    auto host = random_vector<T>(1009);
    mg::distributed_vector<T> a(host, s.group);
    mg::distributed_vector<T> b(a);
    b[5] = random_value<T>();
    EXPECT_TRUE(same_elements(mg::to_vector(a), host)) << "a copy must not share storage";
    mg::distributed_vector<T> c(std::move(b));
    EXPECT_EQ(b.size(), 0u);
    EXPECT_TRUE(same_elements(mg::to_vector(b), std::vector<T>{}));
    b = a;  // a moved-from vector is usable again
    EXPECT_TRUE(same_elements(mg::to_vector(b), host));
    mg::distributed_vector<T> d(10, s.group);
    d = c;
    EXPECT_TRUE(same_elements(mg::to_vector(d), mg::to_vector(c)));
    auto other = random_vector<T>(3);
    mg::distributed_vector<T> e(other, s.group);
    swap(d, e);
    EXPECT_TRUE(same_elements(mg::to_vector(d), other));
    d = std::move(a);
    EXPECT_TRUE(same_elements(mg::to_vector(d), host));
  }
}

TYPED_TEST(Container, ElementAccessReadsAndWritesThrough) {
  using T = TypeParam;
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    auto host = random_vector<T>(s.group.size() + 5);
    mg::distributed_vector<T> v(host, s.group);
    for (std::size_t i = 0; i < host.size(); ++i) EXPECT_TRUE(same_elements(std::vector<T>{v[i]}, {host[i]}));
    const T x = random_value<T>();
    v[host.size() - 1] = x;
    host.back() = x;
    v[0] = v[1];
    host[0] = host[1];
    EXPECT_TRUE(same_elements(mg::to_vector(v), host));
    const auto& cv = v;
    EXPECT_TRUE(same_elements(std::vector<T>{cv.at(2)}, {host[2]}));
    try {
      (void)cv.at(host.size());
      FAIL() << "at() past the end must throw";
    } catch (const std::out_of_range& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(std::to_string(host.size())), std::string::npos) << what;
    }
    auto it = v.begin() + 2;
    *it = x;
    host[2] = x;
    it[1] = x;
    host[3] = x;
    EXPECT_TRUE(same_elements(mg::to_vector(v), host));
    EXPECT_EQ(std::ranges::distance(v), static_cast<std::ptrdiff_t>(host.size()));
  }
}

TYPED_TEST(Container, BatchedReadsAndWritesMatchTheHost) {
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    check_batched_reads_and_writes<TypeParam>(s.group);
  }
}

TYPED_TEST(Container, ResizeKeepsThePrefix) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false))
      for (std::size_t m : {std::size_t{0}, n / 2, n + 3, 2 * n + 11}) {
        SCOPED_TRACE(testing::Message() << s.name << " n=" << n << " -> " << m);
        auto host = random_vector<T>(n);
        mg::distributed_vector<T> v(host, s.group);
        v.resize(m);
        host.resize(m);
        EXPECT_EQ(v.size(), m);
        EXPECT_TRUE(same_elements(mg::to_vector(v), host));
      }
}

// resize(size()) restores the block layout that resize documents (a filter's uneven result,
// everything on the last slot), and leaves a vector already in blocks as it is.
TYPED_TEST(Container, ResizeToItsOwnSizeRestoresTheBlockLayout) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      const std::size_t k = s.group.size();
      const auto host = random_vector<T>(n);
      std::vector<std::size_t> last_slot_only(k, 0);
      last_slot_only[k - 1] = n;
      mg::distributed_vector<T> v(s.group, mg::distribution::from_sizes(last_slot_only));
      mg::copy(host.begin(), host.end(), v.begin());
      v.resize(n);
      EXPECT_EQ(v.layout(), mg::distribution::block(n, k));
      EXPECT_TRUE(same_elements(mg::to_vector(v), host));

      mg::distributed_vector<T> even(host, s.group);
      const T* before = n > 0 ? even.segment(0).data() : nullptr;
      even.resize(n);
      EXPECT_EQ(even.layout(), mg::distribution::block(n, k));
      if (n > 0) EXPECT_EQ(even.segment(0).data(), before) << "already in blocks: nothing moved";
      EXPECT_TRUE(same_elements(mg::to_vector(even), host));
    }
}

TYPED_TEST(Container, SegmentsTileTheIndexSpace) {
  using T = TypeParam;
  for (const auto& s : shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      mg::distributed_vector<T> v(n, s.group);
      std::size_t next = 0;
      auto segments = v.segments();
      ASSERT_EQ(segments.size(), s.group.size());
      for (std::size_t i = 0; i < segments.size(); ++i) {
        const auto& seg = segments[i];
        EXPECT_EQ(seg.slot(), i);
        EXPECT_EQ(seg.device(), s.group.device(i));
        EXPECT_EQ(seg.stream(), s.group.stream(i));
        EXPECT_EQ(seg.offset(), next);
        EXPECT_EQ(seg.span().size(), seg.size());
        if (seg.size() > 0) {
          cudaPointerAttributes attributes{};
          ASSERT_EQ(cudaPointerGetAttributes(&attributes, seg.data()), cudaSuccess);
          EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
          EXPECT_EQ(attributes.device, seg.device());
        }
        next += seg.size();
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(v.segment(0).size() - v.segment(s.group.size() - 1).size(), 1u);
      EXPECT_THROW((void)v.segment(s.group.size()), std::out_of_range);
    }
}

TYPED_TEST(Container, PoolUsageReturnsToItsStartingValue) {
  using T = TypeParam;
  for (const auto& s : shapes()) {
    SCOPED_TRACE(s.name);
    s.group.synchronize();
    const auto before = s.group.pool(0).usage().used_bytes;
    {
      mg::distributed_vector<T> a(100003, s.group);
      mg::distributed_vector<T> b(a);
      b.resize(50);
      mg::distributed_vector<T> c(mg::to_vector(a), s.group);
    }
    s.group.synchronize();
    EXPECT_EQ(s.group.pool(0).usage().used_bytes, before);
  }
}

TEST(ContainerHost, CopyToAndFromHostIterators) {
  const auto& g = shapes()[1].group;
  auto host = random_vector<int>(10007);
  mg::distributed_vector<int> v(host.size(), g);
  mg::copy(host.begin(), host.end(), v.begin());
  EXPECT_TRUE(same_elements(mg::to_vector(v), host));
  std::vector<int> part(100);
  mg::copy(v.begin() + 50, v.begin() + 150, part.begin());
  EXPECT_TRUE(same_elements(part, std::vector<int>(host.begin() + 50, host.begin() + 150)));
  std::list<int> listed;
  mg::copy(v.begin() + 3, v.begin() + 9, std::back_inserter(listed));
  EXPECT_TRUE(same_elements(std::vector<int>(listed.begin(), listed.end()), std::vector<int>(host.begin() + 3, host.begin() + 9)));
  std::list<int> source{1, 2, 3};
  mg::copy(source.begin(), source.end(), v.begin() + 10);
  EXPECT_EQ(v[11], 2);
  EXPECT_THROW(mg::copy(host.begin(), host.end(), v.begin() + 1), std::invalid_argument);
}

TEST(ContainerHost, PinnedHostMemoryIsCopiedDirectly) {
  const auto& g = shapes()[2].group;
  const std::size_t n = 3000017;
  mg::pinned_buffer pinned(n * sizeof(double));
  auto* data = static_cast<double*>(pinned.data());
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<double>(i) * 0.5;
  using mg::diagnostics::count;
  using mg::diagnostics::path;
  const std::uint64_t pinned_up = count(path::pinned_host_upload), staged_up = count(path::staged_host_upload);
  const std::uint64_t pinned_down = count(path::pinned_host_download), staged_down = count(path::staged_host_download);
  mg::distributed_vector<double> v(std::span<const double>(data, n), g);
  mg::pinned_buffer back(n * sizeof(double));
  auto* out = static_cast<double*>(back.data());
  mg::copy(v.begin(), v.end(), out);
  EXPECT_TRUE(std::equal(data, data + n, out));
  EXPECT_EQ(count(path::pinned_host_upload), pinned_up + 1) << "the pinned source was not copied directly";
  EXPECT_EQ(count(path::pinned_host_download), pinned_down + 1) << "the pinned target was not written directly";
  EXPECT_EQ(count(path::staged_host_upload), staged_up) << "pinned memory went through the staging workers";
  EXPECT_EQ(count(path::staged_host_download), staged_down) << "pinned memory went through the staging workers";
  // The same data from pageable memory takes the staging workers, both ways.
  std::vector<double> pageable(data, data + n);
  mg::distributed_vector<double> w(pageable, g);
  std::vector<double> pageable_back = mg::to_vector(w);
  EXPECT_TRUE(pageable_back == pageable);
  EXPECT_EQ(count(path::staged_host_upload), staged_up + 1);
  EXPECT_EQ(count(path::staged_host_download), staged_down + 1);
  EXPECT_EQ(count(path::pinned_host_upload), pinned_up + 1);
}

TEST(ContainerHost, HundredMillionElementsRoundTrip) {
  const auto& g = shapes()[1].group;
  const std::size_t n = 100'000'000;
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), -7);
  mg::distributed_vector<int> v(host, g);
  std::vector<int> back = mg::to_vector(v);
  EXPECT_TRUE(host == back);
}

}  // namespace
