// storage::managed: segments are cudaMallocManaged memory preferring their slot's device,
// algorithms give the same results as on pooled memory, and single elements are read and
// written by the host directly.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <numeric>

namespace {

using namespace test;

bool managed_supported() {
  for (int d = 0; d < mg::visible_device_count(); ++d) {
    int concurrent = 0;
    MULTIGPU_CUDA_TRY(cudaDeviceGetAttribute(&concurrent, cudaDevAttrConcurrentManagedAccess, d));
    if (!concurrent) return false;
  }
  return true;
}

mg::group_options managed_options(mg::peer_policy peers = mg::peer_policy::automatic) {
  mg::group_options options;
  options.peers = peers;
  options.storage = mg::storage::managed;
  return options;
}

/// The shapes of support.hpp, on managed storage.
std::vector<shape> managed_shapes() {
  std::vector<shape> s;
  s.push_back({"{0} managed", mg::device_group({0}, managed_options())});
  s.push_back({"{0,0,0} managed", mg::device_group({0, 0, 0}, managed_options())});
  s.push_back({"{0,0,0} host staged managed", mg::device_group({0, 0, 0}, managed_options(mg::peer_policy::host_staged))});
  if (mg::visible_device_count() > 1) s.push_back({"all devices managed", mg::device_group::all(managed_options())});
  return s;
}

template <class T>
class Managed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!managed_supported()) GTEST_SKIP() << "a device lacks concurrent managed access";
  }
};
using managed_types = ::testing::Types<int, double>;
TYPED_TEST_SUITE(Managed, managed_types);

template <class T>
struct affine_step {
  __host__ __device__ T operator()(const T& x) const { return T(2) * x - T(3); }
};

TYPED_TEST(Managed, SegmentsAreManagedAndPreferTheirDevice) {
  using T = TypeParam;
  for (const auto& s : managed_shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      mg::distributed_vector<T> v(n, s.group);
      for (const auto seg : v.segments()) {
        if (seg.empty()) continue;
        cudaPointerAttributes attributes{};
        ASSERT_EQ(cudaPointerGetAttributes(&attributes, seg.data()), cudaSuccess);
        EXPECT_EQ(attributes.type, cudaMemoryTypeManaged);
        int preferred = -5;
        ASSERT_EQ(cudaMemRangeGetAttribute(&preferred, sizeof(preferred), cudaMemRangeAttributePreferredLocation,
                                           seg.data(), seg.size() * sizeof(T)),
                  cudaSuccess);
        EXPECT_EQ(preferred, seg.device());
      }
    }
}

TYPED_TEST(Managed, BatchedReadsAndWritesGoThroughTheHost) {
  for (const auto& s : managed_shapes()) {
    SCOPED_TRACE(s.name);
    check_batched_reads_and_writes<TypeParam>(s.group);
  }
}

TYPED_TEST(Managed, AlgorithmsMatchTheHost) {
  using T = TypeParam;
  for (const auto& s : managed_shapes())
    for (std::size_t n : sizes(s.group.size(), false)) {
      SCOPED_TRACE(testing::Message() << s.name << " n=" << n);
      std::vector<T> host(n);
      for (std::size_t i = 0; i < n; ++i) host[i] = static_cast<T>(static_cast<long long>(i % 13) - 6);
      mg::distributed_vector<T> v(host, s.group), out(n, s.group);
      EXPECT_TRUE(same_elements(mg::to_vector(v), host));

      mg::transform(v, out, affine_step<T>{});
      std::vector<T> want(n);
      std::transform(host.begin(), host.end(), want.begin(), affine_step<T>{});
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));

      // Small integers: sums are exact in any order, for double too.
      EXPECT_EQ(mg::reduce(out), std::accumulate(want.begin(), want.end(), T(0)));

      mg::inclusive_scan(v, out);
      std::inclusive_scan(host.begin(), host.end(), want.begin());
      EXPECT_TRUE(same_elements(mg::to_vector(out), want));

      // To and from a pooled vector on another group.
      mg::distributed_vector<T> pooled(n, mg::device_group({0, 0}));
      mg::copy(out, pooled);
      EXPECT_TRUE(same_elements(mg::to_vector(pooled), want));
      mg::copy(pooled, v);
      EXPECT_TRUE(same_elements(mg::to_vector(v), want));
    }
}

TYPED_TEST(Managed, HostReadsAndWritesElementsDirectly) {
  using T = TypeParam;
  for (const auto& s : managed_shapes()) {
    SCOPED_TRACE(s.name);
    const std::size_t n = 1000003;
    mg::distributed_vector<T> v(n, T(1), s.group);
    // Device work, then host reads of its result: the reads wait for the slot's stream.
    mg::transform(v, v, affine_step<T>{});  // every element 2 * 1 - 3 = -1
    for (std::size_t i : {std::size_t{0}, n / 3, n / 2, n - 1}) EXPECT_EQ(T(v[i]), T(-1)) << i;
    EXPECT_EQ(v.at(n - 1), T(-1));
    // Host writes, then device work that must see them.
    for (std::size_t i : {std::size_t{0}, n / 3, n - 1}) v[i] = T(10);
    EXPECT_EQ(mg::reduce(v), T(-1) * static_cast<T>(n - 3) + T(30));
    mg::transform(v, v, affine_step<T>{});
    EXPECT_EQ(T(v[n / 3]), T(17));
    EXPECT_EQ(T(v[1]), T(-5));
    // The element the host reads is the memory the device wrote: same address.
    const auto seg = v.segment(0);
    ASSERT_EQ(cudaStreamSynchronize(seg.stream()), cudaSuccess);
    EXPECT_EQ(seg.data()[0], T(17));  // managed memory: plain host load
  }
}

TYPED_TEST(Managed, CopiesResizeAndTeardown) {
  using T = TypeParam;
  const mg::device_group g({0, 0, 0}, managed_options());
  mg::distributed_vector<T> a(5000, T(4), g);
  mg::distributed_vector<T> b(a);  // deep copy, managed too
  b[17] = T(9);
  EXPECT_EQ(T(a[17]), T(4));
  EXPECT_EQ(T(b[17]), T(9));
  b.resize(7);
  EXPECT_TRUE(same_elements(mg::to_vector(b), std::vector<T>{T(4), T(4), T(4), T(4), T(4), T(4), T(4)}));
  b.resize(12000);
  EXPECT_EQ(T(b[11999]), T(0));
  EXPECT_EQ(T(b[6]), T(4));
  for (const auto seg : b.segments()) {
    cudaPointerAttributes attributes{};
    ASSERT_EQ(cudaPointerGetAttributes(&attributes, seg.data()), cudaSuccess);
    EXPECT_EQ(attributes.type, cudaMemoryTypeManaged);
  }
  // Vectors destroyed while their work is in flight: release waits for the stream.
  for (int i = 0; i < 10; ++i) {
    mg::distributed_vector<T> temporary(1 << 20, T(1), g);
    mg::transform(temporary, temporary, affine_step<T>{});
  }
  g.synchronize();
}

TEST(ManagedSupport, RefusedWithoutConcurrentManagedAccess) {
  if (managed_supported()) {
    EXPECT_NO_THROW(mg::device_group({0}, managed_options()));
  } else {
    try {
      mg::device_group group({0}, managed_options());
      ADD_FAILURE() << "storage::managed accepted on a device without concurrent managed access";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("concurrent managed access"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
