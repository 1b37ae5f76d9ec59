// device_group::wait(event) and device_group::record(event, slot): ordering with work the
// user enqueues on their own streams, with no host wait in between. A gate kernel on a user
// stream spins until the host opens a flag in mapped memory (or a timeout passes, so a bug
// cannot hang the test); the group waits for an event recorded after the gate, runs a
// transform and a scan, and records `done`. While the gate is closed `done` must stay
// incomplete; once it completes, the results must be there, read on a stream that is not
// ordered with the group's streams at all.
#include <multigpu/multigpu.hpp>
#include <multigpu/testing/schedule.hpp>

#include "gate_kernel.cuh"
#include "support.hpp"

#include <chrono>
#include <cstddef>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using namespace test;

/// A flag pair in mapped, pinned host memory, with an event and a stream of the user's.
class user_gate {
 public:
  explicit user_gate(int device) : device_(device) {
    mg::device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&flags_), 2 * sizeof(int), cudaHostAllocMapped));
    flags_[0] = 0;
    flags_[1] = 0;
    MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&after_gate_, cudaEventDisableTiming));
  }
  ~user_gate() {
    open();
    mg::device_guard guard(device_);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaEventDestroy(after_gate_), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(stream_), cudaSuccess);
    EXPECT_EQ(cudaFreeHost(flags_), cudaSuccess);
  }
  user_gate(const user_gate&) = delete;
  user_gate& operator=(const user_gate&) = delete;

  /// Enqueues the gate kernel on the user's stream, shut or already open, and records the
  /// user's event after it.
  cudaEvent_t launch(bool shut) {
    volatile int* flags = flags_;
    flags[0] = shut ? 0 : 1;
    flags[1] = 0;
    mg::device_guard guard(device_);
    int* device_flags = nullptr;
    MULTIGPU_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device_flags), flags_, 0));
    wait_for_gate<<<1, 1, 0, stream_>>>(device_flags, gate_timeout_cycles, device_flags + 1);
    MULTIGPU_CUDA_TRY(cudaGetLastError());
    MULTIGPU_CUDA_TRY(cudaEventRecord(after_gate_, stream_));
    return after_gate_;
  }
  void open() {
    volatile int* flags = flags_;
    flags[0] = 1;
  }
  bool timed_out() const {
    const volatile int* flags = flags_;
    return flags[1] != 0;
  }
  cudaStream_t stream() const { return stream_; }

 private:
  int device_;
  int* flags_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t after_gate_ = nullptr;
};

/// An event of the user's on `device`, destroyed with the object.
struct user_event {
  explicit user_event(int device) : device(device) {
    mg::device_guard guard(device);
    MULTIGPU_CUDA_TRY(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  }
  ~user_event() {
    mg::device_guard guard(device);
    EXPECT_EQ(cudaEventDestroy(event), cudaSuccess);
  }
  user_event(const user_event&) = delete;
  user_event& operator=(const user_event&) = delete;
  int device;
  cudaEvent_t event = nullptr;
};

struct affine_step {
  __host__ __device__ long long operator()(long long x) const { return 3 * x - 5; }
};

/// Copies every segment to the host on `stream`, which the group's streams know nothing
/// of: only an event that covers the group's work makes the values right.
template <class T>
std::vector<T> read_on(cudaStream_t stream, int device, const mg::distributed_vector<T>& v) {
  std::vector<T> host(v.size());
  mg::device_guard guard(device);
  for (const auto seg : v.segments())
    if (seg.size() > 0)
      MULTIGPU_CUDA_TRY(cudaMemcpyAsync(host.data() + seg.offset(), seg.data(), seg.size() * sizeof(T),
                                        cudaMemcpyDeviceToHost, stream));
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
  return host;
}

/// The gated run on `group`, `done` recorded on `slot`.
void gated_run(const mg::device_group& group, std::size_t slot) {
  const std::size_t n = (std::size_t{1} << 20) + 3;
  std::vector<long long> host(n);
  std::iota(host.begin(), host.end(), -1000LL);
  mg::distributed_vector<long long> in(host, group);
  mg::distributed_vector<long long> mapped(n, group), scanned(n, group);
  user_gate gate(group.device(slot));
  user_event done(group.device(slot));

  // Warm-up: every kernel below is loaded once, so that the timing checks see no lazy loading.
  group.wait(gate.launch(/*shut=*/false));
  mg::transform(in, mapped, affine_step{});
  mg::inclusive_scan(mapped, scanned);
  group.record(done.event, slot);
  ASSERT_EQ(cudaEventSynchronize(done.event), cudaSuccess);

  const cudaEvent_t after_gate = gate.launch(/*shut=*/true);
  group.wait(after_gate);
  mg::transform(in, mapped, affine_step{});
  mg::inclusive_scan(mapped, scanned);
  group.record(done.event, slot);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(cudaEventQuery(done.event), cudaErrorNotReady) << "`done` completed while the gate was shut";
  EXPECT_EQ(cudaEventQuery(after_gate), cudaErrorNotReady);
  gate.open();
  ASSERT_EQ(cudaEventSynchronize(done.event), cudaSuccess);
  EXPECT_FALSE(gate.timed_out()) << "the gate kernel gave up waiting: the host was blocked behind it";

  std::vector<long long> want(n);
  std::transform(host.begin(), host.end(), want.begin(), affine_step{});
  EXPECT_TRUE(same_elements(read_on(gate.stream(), group.device(slot), mapped), want));
  std::inclusive_scan(want.begin(), want.end(), want.begin());
  EXPECT_TRUE(same_elements(read_on(gate.stream(), group.device(slot), scanned), want));
}

TEST(UserEvents, TheGroupWaitsForTheUsersEventAndRecordsOneAfterAllItsWork) {
  for (auto dispatch : {mg::dispatch_policy::caller_thread, mg::dispatch_policy::worker_threads}) {
    mg::group_options options;
    options.dispatch = dispatch;
    const mg::device_group group({0, 0, 0}, options);
    for (std::size_t slot : {std::size_t{0}, std::size_t{2}}) {
      SCOPED_TRACE(testing::Message() << "dispatch " << static_cast<int>(dispatch) << ", done on slot " << slot);
      gated_run(group, slot);
    }
  }
}

TEST(UserEvents, OneSlotAndSeveralDevices) {
  gated_run(mg::device_group({0}), 0);
  if (mg::visible_device_count() > 1) {
    const mg::device_group all = mg::device_group::all();
    gated_run(all, all.size() - 1);
  }
}

TEST(UserEvents, BadSlotsAndEventsAreRefused) {
  const mg::device_group group({0, 0, 0});
  user_event done(0);
  EXPECT_THROW(group.record(done.event, 3), std::out_of_range);
  EXPECT_THROW(group.record(nullptr, 0), std::invalid_argument);
  EXPECT_THROW(group.wait(nullptr), std::invalid_argument);
  if (mg::visible_device_count() > 1) {
    user_event elsewhere(1);  // an event of device 1 cannot be recorded on device 0's stream
    EXPECT_THROW(group.record(elsewhere.event, 0), mg::cuda_error);
    group.wait(elsewhere.event);  // waiting across devices is fine (never recorded: no wait)
  }
  // The group still works after the refusals.
  mg::distributed_vector<int> v(1000, 1, group);
  EXPECT_EQ(mg::reduce(v), 1000);
}

TEST(UserEvents, RecordCoversWorkTheGroupEnqueuedOnEverySlot) {
  // No gate: `done` on slot 1 must cover a fill on slot 0 and slot 2 as well, read back on a
  // foreign stream after only cudaEventSynchronize(done).
  for (auto dispatch : {mg::dispatch_policy::caller_thread, mg::dispatch_policy::worker_threads}) {
    mg::group_options options;
    options.dispatch = dispatch;
    const mg::device_group group({0, 0, 0}, options);
    user_event done(0);
    user_gate reader(0);
    for (int round = 0; round < 5; ++round) {
      mg::distributed_vector<int> v((std::size_t{1} << 22) + 1, round, group);
      group.record(done.event, 1);
      ASSERT_EQ(cudaEventSynchronize(done.event), cudaSuccess);
      EXPECT_TRUE(same_elements(read_on(reader.stream(), 0, v), std::vector<int>(v.size(), round)));
    }
  }
}

/// True when node `to` depends on node `from` through the recorded edges.
bool reaches(const mg::testing::schedule_graph& graph, std::size_t from, std::size_t to) {
  std::vector<bool> seen(graph.nodes.size(), false);
  std::vector<std::size_t> pending{from};
  while (!pending.empty()) {
    const std::size_t at = pending.back();
    pending.pop_back();
    if (at == to) return true;
    if (seen[at]) continue;
    seen[at] = true;
    for (auto [a, b] : graph.edges)
      if (a == at) pending.push_back(b);
  }
  return false;
}

TEST(UserEvents, RecordThenWaitJoinsEverySlotInTheRecordedSchedule) {
  // record() on slot 0 and wait() on the same event: in the recorded schedule every step of
  // the second transform depends on every slot's step of the first, as on the device.
  const mg::device_group group({0, 0, 0});
  mg::distributed_vector<long long> v(3000, 1, group);
  user_event done(0);
  group.synchronize();
  mg::testing::schedule_recording recording;
  mg::transform(v, v, affine_step{});
  const std::size_t first_round = recording.graph().nodes.size();
  group.record(done.event, 0);
  group.wait(done.event);
  mg::transform(v, v, affine_step{});
  group.synchronize();
  const mg::testing::schedule_graph graph = recording.graph();
  ASSERT_GE(first_round, group.size());
  ASSERT_GE(graph.nodes.size(), first_round + group.size());
  for (std::size_t a = 0; a < first_round; ++a)
    for (std::size_t b = first_round; b < graph.nodes.size(); ++b)
      EXPECT_TRUE(reaches(graph, a, b)) << "step " << b << " does not follow step " << a;
  EXPECT_TRUE(same_elements(mg::to_vector(v), std::vector<long long>(3000, 3 * (3 * 1 - 5) - 5)));
}

}  // namespace
