// Vector segments from the user's memory resources (group_options::resources). A counting
// resource written here wraps a pool_resource of another group's pool and keeps a ledger of
// every live allocation (bytes, alignment, stream), so that the tests see: every segment
// comes from the resource on its slot's stream with the slot's device current, every byte
// goes back on the stream it was taken on, a resource that fails (nullptr, or an exception)
// leaves nothing behind and the group usable, and a vector destroyed while a kernel still
// writes it does not corrupt the next allocation.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <numeric>
#include <set>
#include <thread>
#include <vector>

// Named, not anonymous: nvcc warns about hidden friends of types with internal linkage that
// only the resource concepts look up.
namespace counting {

namespace mg = multigpu;

/// What a counting_resource saw. Shared by the copies of the resource that slots hold.
struct ledger {
  struct allocation {
    std::size_t bytes;
    std::size_t alignment;
    cudaStream_t stream;
  };
  mutable std::mutex mutex;
  std::map<void*, allocation> live;
  std::size_t outstanding = 0;      // bytes allocated and not yet given back
  int allocations = 0;              // calls to allocate_async, failed ones included
  int deallocations = 0;
  int mismatches = 0;               // a release whose size, alignment or stream differs from its allocation
  std::set<int> devices;            // the current device at each allocation
  std::set<cudaStream_t> streams;   // the streams of allocations and releases
  int null_from = 0;                // > 0: calls from this one on return nullptr
  int throw_at = 0;                 // > 0: this call throws std::bad_alloc

  std::size_t outstanding_bytes() const {
    std::lock_guard lock(mutex);
    return outstanding;
  }
  std::size_t live_count() const {
    std::lock_guard lock(mutex);
    return live.size();
  }
  cudaStream_t stream_of(const void* p) const {
    std::lock_guard lock(mutex);
    auto it = live.find(const_cast<void*>(p));
    return it == live.end() ? nullptr : it->second.stream;
  }
};

class counting_resource {
 public:
  counting_resource(mg::device_pool& pool, ledger& book) : pool_(pool), book_(&book) {}

  void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) {
    std::lock_guard lock(book_->mutex);
    const int call = ++book_->allocations;
    if (book_->null_from > 0 && call >= book_->null_from) return nullptr;
    if (book_->throw_at > 0 && call == book_->throw_at) throw std::bad_alloc();
    int device = -1;
    EXPECT_EQ(cudaGetDevice(&device), cudaSuccess);
    book_->devices.insert(device);
    void* p = pool_.allocate_async(bytes, alignment, stream);
    book_->live[p] = {bytes, alignment, stream.get()};
    book_->outstanding += bytes;
    book_->streams.insert(stream.get());
    return p;
  }
  void deallocate_async(void* p, std::size_t bytes, std::size_t alignment, cuda::stream_ref stream) noexcept {
    {
      std::lock_guard lock(book_->mutex);
      ++book_->deallocations;
      auto it = book_->live.find(p);
      if (it == book_->live.end() || it->second.bytes != bytes || it->second.alignment != alignment ||
          it->second.stream != stream.get()) {
        ++book_->mismatches;
      } else {
        book_->outstanding -= bytes;
        book_->live.erase(it);
      }
      book_->streams.insert(stream.get());
    }
    pool_.deallocate_async(p, bytes, alignment, stream);
  }
  void* allocate(std::size_t bytes, std::size_t alignment) { return pool_.allocate(bytes, alignment); }
  void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept { pool_.deallocate(p, bytes, alignment); }

  friend bool operator==(const counting_resource& a, const counting_resource& b) {
    return a.pool_ == b.pool_ && a.book_ == b.book_;
  }
  friend bool operator!=(const counting_resource& a, const counting_resource& b) { return !(a == b); }
  friend constexpr void get_property(const counting_resource&, cuda::mr::device_accessible) noexcept {}

 private:
  mg::pool_resource pool_;
  ledger* book_;
};

static_assert(cuda::mr::async_resource_with<counting_resource, cuda::mr::device_accessible>);

}  // namespace counting

namespace {

using namespace test;
using counting::counting_resource;
using counting::ledger;

/// A group on `devices` whose slots draw from `resources` (one per slot).
mg::device_group group_on(std::vector<int> devices, std::vector<counting_resource*> resources,
                          mg::peer_policy peers = mg::peer_policy::automatic) {
  mg::group_options options;
  options.peers = peers;
  for (counting_resource* r : resources) options.resources.emplace_back(*r);
  return mg::device_group(std::move(devices), options);
}

template <class T>
T value_at(std::size_t i) {  // small integers: every sum below is exact
  if constexpr (std::is_same_v<T, vec3>)
    return {static_cast<double>(i % 5), static_cast<double>(i % 3) - 1.0, 1.0};
  else
    return static_cast<T>(static_cast<long long>(i % 201) - 100);
}

struct twice {
  template <class T>
  __host__ __device__ T operator()(const T& x) const { return x + x; }
};

/// Every non-empty segment of `v` came from the ledger, on its slot's stream.
template <class T>
void expect_segments_on_slot_streams(const mg::distributed_vector<T>& v, const ledger& book) {
  for (std::size_t s = 0; s < v.segment_count(); ++s) {
    const auto seg = v.segment(s);
    if (seg.size() == 0) continue;
    EXPECT_EQ(book.stream_of(seg.data()), v.group().stream(s)) << "segment " << s;
  }
}

template <class T>
void exercise(const mg::device_group& group, const ledger& book, std::size_t n) {
  SCOPED_TRACE(testing::Message() << "n = " << n);
  std::vector<T> host(n);
  for (std::size_t i = 0; i < n; ++i) host[i] = value_at<T>(i);

  mg::distributed_vector<T> v(host, group);
  expect_segments_on_slot_streams(v, book);
  if (n > 0) EXPECT_GE(book.outstanding_bytes(), n * sizeof(T));

  mg::distributed_vector<T> doubled(n, group);
  mg::transform(v, doubled, twice{});
  std::vector<T> want(n);
  std::transform(host.begin(), host.end(), want.begin(), twice{});
  EXPECT_TRUE(same_elements(mg::to_vector(doubled), want));

  EXPECT_EQ(mg::reduce(v), std::accumulate(host.begin(), host.end(), T{}));

  mg::distributed_vector<T> scanned(n, group);
  mg::inclusive_scan(v, scanned);
  std::inclusive_scan(host.begin(), host.end(), want.begin());
  EXPECT_TRUE(same_elements(mg::to_vector(scanned), want));

  mg::distributed_vector<T> copied(n, group);
  mg::copy(v, copied);
  EXPECT_TRUE(same_elements(mg::to_vector(copied), host));

  v.resize(n / 2 + 1);  // rebalanced: a new set of segments, the old ones given back
  host.resize(n / 2 + 1);
  expect_segments_on_slot_streams(v, book);
  EXPECT_TRUE(same_elements(mg::to_vector(v), host));
}

template <class T>
void exercise_all_sizes(const mg::device_group& group, const ledger& book) {
  const std::size_t k = group.size();
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, k > 1 ? k - 1 : 2, std::size_t{1009},
                        (std::size_t{1} << 20) + 3})
    exercise<T>(group, book, n);
}

/// After the vectors are gone and the streams idle: nothing outstanding, every release
/// matched its allocation, and only the group's streams (and the slots' device) were used.
void expect_all_returned(const mg::device_group& group, const ledger& book) {
  group.synchronize();
  std::lock_guard lock(book.mutex);
  EXPECT_EQ(book.outstanding, 0u);
  EXPECT_TRUE(book.live.empty());
  EXPECT_EQ(book.mismatches, 0);
  EXPECT_GT(book.allocations, 0);
  for (cudaStream_t s : book.streams) {
    bool slot_stream = false;
    for (std::size_t slot = 0; slot < group.size(); ++slot) slot_stream = slot_stream || s == group.stream(slot);
    EXPECT_TRUE(slot_stream) << "a stream that is no slot's stream was used";
  }
  for (int d : book.devices) EXPECT_EQ(d, 0);
}

TEST(UserResources, SegmentsComeFromTheResourcesAndAllGoBack) {
  const mg::device_group base({0});  // the pool the counting resources draw from
  base.synchronize();
  const std::size_t pool_before = base.pool(0).usage().used_bytes;

  struct case_ {
    const char* name;
    std::vector<int> devices;
    bool shared;  // one resource for every slot, or one each
    mg::peer_policy peers;
  };
  for (const case_& c : {case_{"{0}", {0}, false, mg::peer_policy::automatic},
                         case_{"{0,0,0}, one shared resource", {0, 0, 0}, true, mg::peer_policy::automatic},
                         case_{"{0,0} host staged", {0, 0}, false, mg::peer_policy::host_staged}}) {
    SCOPED_TRACE(c.name);
    ledger book;
    std::vector<std::unique_ptr<counting_resource>> owned;
    std::vector<counting_resource*> per_slot;
    for (std::size_t s = 0; s < c.devices.size(); ++s) {
      if (!c.shared || owned.empty()) owned.push_back(std::make_unique<counting_resource>(base.pool(0), book));
      per_slot.push_back(owned.back().get());
    }
    {
      const mg::device_group group = group_on(c.devices, per_slot, c.peers);
      EXPECT_NE(group.describe().find("memory resources"), std::string::npos);
      exercise_all_sizes<int>(group, book);
      exercise_all_sizes<double>(group, book);
      exercise_all_sizes<vec3>(group, book);
      expect_all_returned(group, book);
    }
    base.synchronize();
    EXPECT_EQ(base.pool(0).usage().used_bytes, pool_before);
  }
}

__global__ void spin_then_fill(int* data, std::size_t n, long long cycles, int value) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (std::size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] = value;
}

TEST(UserResources, AVectorDestroyedUnderARunningKernelDoesNotCorruptTheNextOne) {
  const mg::device_group base({0});
  ledger book;
  counting_resource resource(base.pool(0), book);
  const mg::device_group group = group_on({0, 0, 0}, {&resource, &resource, &resource});
  const std::size_t n = std::size_t{3} << 20;
  {
    mg::distributed_vector<int> warm(n, group);  // loads the kernel: the timing below is its own
    const auto seg = warm.segment(0);
    mg::device_guard guard(seg.device());
    spin_then_fill<<<64, 256, 0, seg.stream()>>>(seg.data(), seg.size(), 0, 1);
    ASSERT_EQ(cudaGetLastError(), cudaSuccess);
    group.synchronize();
  }
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(testing::Message() << "round " << round);
    {
      mg::distributed_vector<int> doomed(n, group);
      for (std::size_t s = 0; s < group.size(); ++s) {
        const auto seg = doomed.segment(s);
        mg::device_guard guard(seg.device());
        // About 0.1 s of spinning, then a write over the whole segment.
        spin_then_fill<<<64, 256, 0, seg.stream()>>>(seg.data(), seg.size(), 200'000'000LL, -1);
        ASSERT_EQ(cudaGetLastError(), cudaSuccess);
      }
    }  // released now, on the slot streams, behind the kernels
    mg::distributed_vector<int> next(n, group);
    mg::iota(next, 0);
    const std::vector<int> got = mg::to_vector(next);
    std::vector<int> want(n);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_TRUE(same_elements(got, want));
  }
  expect_all_returned(group, book);
}

TEST(UserResources, SortReadsInPlaceOnlyWhereTheMemoryIsReachable) {
  // A peer link lets a kernel load another device's memory only where that memory was
  // granted; a user's resource is granted nothing. So across devices the sort exchanges
  // the pieces instead of merging them in place; slots of one device read in place.
  const bool two_devices = mg::visible_device_count() > 1;
  const mg::device_group base0({0});
  const mg::device_group base1({two_devices ? 1 : 0});
  ledger book;
  counting_resource r0(base0.pool(0), book), r1(base1.pool(0), book);
  const std::vector<int> devices = two_devices ? std::vector<int>{0, 1} : std::vector<int>{0, 0};
  const mg::device_group group = group_on(devices, {&r0, &r1});
  const std::size_t n = 100003;
  std::vector<int> keys_host(n), values_host(n);
  for (std::size_t i = 0; i < n; ++i) keys_host[i] = static_cast<int>((i * 2654435761u) % 1000003u);
  std::iota(values_host.begin(), values_host.end(), 0);
  {
    mg::distributed_vector<int> keys(keys_host, group);
    mg::detail::sort_stats stats;
    mg::detail::sort_in_layout(keys, static_cast<mg::distributed_vector<mg::detail::no_values>*>(nullptr),
                               cuda::std::less<>{}, &stats);
    EXPECT_EQ(stats.merged_in_place, !two_devices);
    std::vector<int> want = keys_host;
    std::sort(want.begin(), want.end());
    EXPECT_EQ(mg::to_vector(keys), want);

    mg::distributed_vector<int> k2(keys_host, group), v2(values_host, group);
    mg::sort_by_key(k2, v2);
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return keys_host[a] < keys_host[b]; });
    EXPECT_EQ(mg::to_vector(k2), want);
    EXPECT_EQ(mg::to_vector(v2), order);
  }
  group.synchronize();
  std::lock_guard lock(book.mutex);
  EXPECT_EQ(book.outstanding, 0u) << "a segment was not given back";
  EXPECT_EQ(book.mismatches, 0);
}

TEST(UserResources, AResourceThatReturnsNullptrThrowsOutOfMemoryAndLeaksNothing) {
  const mg::device_group base({0});
  ledger book;
  counting_resource resource(base.pool(0), book);
  const mg::device_group group = group_on({0, 0, 0}, {&resource, &resource, &resource});
  book.null_from = 2;  // the second segment fails: the first must be given back
  const std::size_t n = 3000;
  try {
    mg::distributed_vector<int> v(n, group);
    ADD_FAILURE() << "a resource that returned nullptr went unnoticed";
  } catch (const mg::out_of_memory& e) {
    EXPECT_EQ(e.device(), 0);
    EXPECT_EQ(e.requested_bytes(), (n / 3) * sizeof(int));
  }
  group.synchronize();
  EXPECT_EQ(book.allocations, 2);
  EXPECT_EQ(book.deallocations, 1);
  EXPECT_EQ(book.outstanding_bytes(), 0u);
  EXPECT_EQ(book.live_count(), 0u);

  book.null_from = 0;  // the group is still usable
  mg::distributed_vector<int> v(n, 2, group);
  EXPECT_EQ(mg::reduce(v), 2 * static_cast<int>(n));
}

TEST(UserResources, AResourceThatThrowsLetsItsExceptionThroughAndLeaksNothing) {
  const mg::device_group base({0});
  ledger book;
  counting_resource resource(base.pool(0), book);
  const mg::device_group group = group_on({0, 0, 0}, {&resource, &resource, &resource});
  book.throw_at = 3;  // the third segment: two are given back
  try {
    mg::distributed_vector<double> v(3000, 1.0, group);
    ADD_FAILURE() << "the resource's exception was swallowed";
  } catch (const std::bad_alloc& e) {
    EXPECT_EQ(dynamic_cast<const mg::out_of_memory*>(&e), nullptr) << "the resource's own exception, not ours";
  }
  group.synchronize();
  EXPECT_EQ(book.allocations, 3);
  EXPECT_EQ(book.deallocations, 2);
  EXPECT_EQ(book.outstanding_bytes(), 0u);
  EXPECT_EQ(book.live_count(), 0u);

  mg::distributed_vector<double> v(3000, 1.0, group);
  EXPECT_EQ(mg::reduce(v), 3000.0);
  book.throw_at = 0;
}

TEST(UserResources, OptionsThatDoNotFitAreRefused) {
  const mg::device_group base({0});
  ledger book;
  counting_resource resource(base.pool(0), book);
  EXPECT_THROW(group_on({0, 0}, {&resource}), std::invalid_argument);
  mg::group_options managed;
  managed.storage = mg::storage::managed;
  managed.resources = {mg::device_resource_ref{resource}};
  EXPECT_THROW(mg::device_group({0}, managed), std::invalid_argument);
  EXPECT_EQ(book.allocations, 0);
}

}  // namespace
