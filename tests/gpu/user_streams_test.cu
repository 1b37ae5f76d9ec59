// Groups on streams the user owns (group_options::streams): the library orders its work on
// them, never destroys them, and refuses streams that do not fit their slots.
#include <multigpu/multigpu.hpp>

#include "support.hpp"

#include <numeric>

namespace {

using namespace test;

/// Streams created (and destroyed) by the test, as a user would.
class user_streams {
 public:
  explicit user_streams(const std::vector<int>& devices, unsigned flags = cudaStreamNonBlocking) {
    for (int d : devices) {
      mg::device_guard guard(d);
      cudaStream_t s = nullptr;
      MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&s, flags));
      handles.push_back(s);
      owners.push_back(d);
    }
  }
  ~user_streams() {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      mg::device_guard guard(owners[i]);
      EXPECT_EQ(cudaStreamDestroy(handles[i]), cudaSuccess);
    }
  }
  /// Each stream still works: a memset on it completes.
  void expect_usable() const {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      mg::device_guard guard(owners[i]);
      void* p = nullptr;
      ASSERT_EQ(cudaMallocAsync(&p, 64, handles[i]), cudaSuccess);
      EXPECT_EQ(cudaMemsetAsync(p, 1, 64, handles[i]), cudaSuccess);
      EXPECT_EQ(cudaFreeAsync(p, handles[i]), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(handles[i]), cudaSuccess);
    }
  }
  std::vector<cudaStream_t> handles;
  std::vector<int> owners;
};

struct add_slot_marker {
  __host__ __device__ int operator()(int x) const { return 3 * x - 1; }
};

void run_algorithms_on(const mg::device_group& group, std::size_t n) {
  std::vector<int> host(n);
  std::iota(host.begin(), host.end(), -7);
  mg::distributed_vector<int> v(host, group);
  mg::distributed_vector<int> out(n, group);
  mg::transform(v, out, add_slot_marker{});
  for (int& x : host) x = 3 * x - 1;
  EXPECT_TRUE(same_elements(mg::to_vector(out), host));
  const long long want = std::accumulate(host.begin(), host.end(), 0LL);
  mg::distributed_vector<long long> wide(std::vector<long long>(host.begin(), host.end()), group);
  EXPECT_EQ(mg::reduce(wide), want);
}

TEST(UserStreams, GroupWorksOnTheUsersStreamsAndLeavesThemAlive) {
  for (auto dispatch : {mg::dispatch_policy::caller_thread, mg::dispatch_policy::worker_threads})
    for (const std::vector<int>& devices : {std::vector<int>{0}, std::vector<int>{0, 0, 0}}) {
      SCOPED_TRACE(testing::Message() << devices.size() << " slot(s), dispatch " << static_cast<int>(dispatch));
      user_streams mine(devices);
      {
        mg::group_options options;
        options.dispatch = dispatch;
        options.streams = mine.handles;
        mg::device_group group(devices, options);
        for (std::size_t s = 0; s < group.size(); ++s) EXPECT_EQ(group.stream(s), mine.handles[s]);
        mg::distributed_vector<int> v(100, group);
        for (std::size_t s = 0; s < group.size(); ++s) EXPECT_EQ(v.segment(s).stream(), mine.handles[s]);
        for (std::size_t n : {std::size_t{0}, std::size_t{1}, devices.size() + 1, std::size_t{1000003}})
          run_algorithms_on(group, n);
      }
      // The group and its vectors are gone; the streams are not.
      mine.expect_usable();
    }
}

TEST(UserStreams, BlockingStreamsAndASharedStreamWork) {
  user_streams blocking({0, 0}, cudaStreamDefault);
  mg::group_options options;
  options.streams = blocking.handles;
  run_algorithms_on(mg::device_group({0, 0}, options), 4099);
  // Two slots on one stream: their work is serialised, and still correct.
  user_streams one({0});
  mg::group_options shared;
  shared.streams = {one.handles[0], one.handles[0]};
  run_algorithms_on(mg::device_group({0, 0}, shared), 4099);
  one.expect_usable();
}

TEST(UserStreams, WorkTheUserEnqueuedFirstIsSeen) {
  // The user writes a segment with their own memset on the slot's stream, then reduces:
  // stream order alone makes the write visible, no synchronisation needed.
  user_streams mine({0, 0, 0});
  mg::group_options options;
  options.streams = mine.handles;
  mg::device_group group({0, 0, 0}, options);
  mg::distributed_vector<int> v(90, 0, group);  // 90 * 0x01010101 fits an int
  for (std::size_t s = 0; s < group.size(); ++s) {
    const auto seg = v.segment(s);
    mg::device_guard guard(seg.device());
    ASSERT_EQ(cudaMemsetAsync(seg.data(), 0x01, seg.size() * sizeof(int), mine.handles[s]), cudaSuccess);
  }
  EXPECT_EQ(mg::reduce(v), 90 * 0x01010101);
}

TEST(UserStreams, StreamsThatDoNotFitAreRefused) {
  user_streams mine({0, 0});
  auto make = [](std::vector<int> devices, std::vector<cudaStream_t> streams) {
    mg::group_options options;
    options.streams = std::move(streams);
    return mg::device_group(std::move(devices), options);
  };
  EXPECT_THROW(make({0, 0, 0}, mine.handles), std::invalid_argument);                  // too few
  EXPECT_THROW(make({0}, mine.handles), std::invalid_argument);                        // too many
  EXPECT_THROW(make({0, 0}, {mine.handles[0], nullptr}), std::invalid_argument);      // legacy default
  EXPECT_THROW(make({0, 0}, {cudaStreamPerThread, mine.handles[1]}), std::invalid_argument);
  EXPECT_THROW(make({0}, {cudaStreamLegacy}), std::invalid_argument);
  try {
    make({0, 0, 0}, mine.handles);
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("2 stream(s) for 3 slot(s)"), std::string::npos) << e.what();
  }
  mine.expect_usable();  // a refused group destroyed none of them
}

TEST(UserStreams, AStreamOfAnotherDeviceIsRefused) {
  if (mg::visible_device_count() < 2) GTEST_SKIP() << "needs two GPUs";
  user_streams mine({0, 1});
  mg::group_options options;
  options.streams = {mine.handles[1], mine.handles[0]};  // swapped: each on the other device
  try {
    mg::device_group group({0, 1}, options);
    ADD_FAILURE() << "a stream of device 1 was accepted for a slot on device 0";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to device 1 but the slot is on device 0"), std::string::npos)
        << e.what();
  }
  options.streams = mine.handles;
  run_algorithms_on(mg::device_group({0, 1}, options), 1000003);
  mine.expect_usable();
}

}  // namespace
