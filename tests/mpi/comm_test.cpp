// The communicators' primitives under mpirun, on host and device buffers, against values
// each rank computes for itself.

#include "support.hpp"

#include <multigpu/comm/mpi_communicator.hpp>
#if MULTIGPU_HAS_NCCL
#include <multigpu/comm/nccl_communicator.hpp>
#endif
#include <multigpu/core/device_guard.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

namespace mg = multigpu;
using namespace mg_test;

namespace {

// A device copy of a host vector, freed at scope exit.
template <class T>
struct device_array {
  T* data = nullptr;
  std::size_t n = 0;
  explicit device_array(const std::vector<T>& host) : n(host.size()) {
    MULTIGPU_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&data), std::max<std::size_t>(1, n) * sizeof(T)));
    if (n) MULTIGPU_CUDA_TRY(cudaMemcpy(data, host.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~device_array() { cudaFree(data); }
  std::vector<T> host() const {
    std::vector<T> h(n);
    if (n) MULTIGPU_CUDA_TRY(cudaMemcpy(h.data(), data, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
  }
};

// Every primitive on one communicator, host buffers and device buffers.
void exercise(mg::communicator& comm, bool device) {
  const int rank = comm.rank(), size = comm.size();
  // all_gather: rank r sends r*10 .. r*10+2.
  std::vector<int> mine{rank * 10, rank * 10 + 1, rank * 10 + 2}, all(3 * size, -1), expected;
  for (int r = 0; r < size; ++r)
    for (int k = 0; k < 3; ++k) expected.push_back(r * 10 + k);
  if (device) {
    device_array<int> d_mine(mine), d_all(all);
    comm.all_gather(d_mine.data, d_all.data, 3);
    EXPECT_EQ(d_all.host(), expected);
  } else {
    comm.all_gather(mine.data(), all.data(), 3);
    EXPECT_EQ(all, expected);
  }
  // all_reduce of each built-in operator.
  std::vector<long long> values{rank + 1LL, -(rank + 1LL), 2};
  const long long sum = static_cast<long long>(size) * (size + 1) / 2;
  struct { mg::reduce_op op; std::vector<long long> expect; } cases[] = {
      {mg::reduce_op::sum, {sum, -sum, 2LL * size}},
      {mg::reduce_op::min, {1, -static_cast<long long>(size), 2}},
      {mg::reduce_op::max, {size, -1, 2}},
      {mg::reduce_op::prod, {[&] { long long p = 1; for (int r = 1; r <= size; ++r) p *= r; return p; }(),
                             [&] { long long p = 1; for (int r = 1; r <= size; ++r) p *= -r; return p; }(),
                             1LL << size}},
  };
  for (const auto& c : cases) {
    std::vector<long long> out(3, 0);
    if (device) {
      device_array<long long> d_in(values), d_out(out);
      comm.all_reduce(d_in.data, d_out.data, 3, c.op);
      EXPECT_EQ(d_out.host(), c.expect) << mg::name_of(c.op);
      comm.all_reduce(d_in.data, d_in.data, 3, c.op);  // in place
      EXPECT_EQ(d_in.host(), c.expect) << mg::name_of(c.op) << " in place";
    } else {
      comm.all_reduce(values.data(), out.data(), 3, c.op);
      EXPECT_EQ(out, c.expect) << mg::name_of(c.op);
    }
  }
  EXPECT_DOUBLE_EQ(comm.all_reduce(0.5 * rank, mg::reduce_op::max), 0.5 * (size - 1));
  // A ring: send to the right, receive from the left.
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  std::vector<int> message(5 + rank % 2, rank), got(5 + left % 2, -1);
  if (device) {
    device_array<int> d_message(message), d_got(got);
    comm.send_recv(d_message.data, message.size(), right, d_got.data, got.size(), left);
    EXPECT_EQ(d_got.host(), std::vector<int>(5 + left % 2, left));
  } else {
    comm.send_recv(message.data(), message.size(), right, got.data(), got.size(), left);
    EXPECT_EQ(got, std::vector<int>(5 + left % 2, left));
  }
  // all_to_all_v: rank r sends (r + d) % 3 elements valued 100 r + d to rank d.
  std::vector<std::size_t> sc(size), sd(size), rc(size), rd(size);
  std::vector<int> send, want;
  for (int d = 0; d < size; ++d) {
    sc[d] = static_cast<std::size_t>((rank + d) % 3);
    sd[d] = send.size();
    send.insert(send.end(), sc[d], 100 * rank + d);
  }
  for (int s = 0; s < size; ++s) {
    rc[s] = static_cast<std::size_t>((s + rank) % 3);
    rd[s] = want.size();
    want.insert(want.end(), rc[s], 100 * s + rank);
  }
  std::vector<int> received(want.size(), -1);
  if (device) {
    device_array<int> d_send(send), d_received(received);
    comm.all_to_all_v(d_send.data, std::span<const std::size_t>(sc), std::span<const std::size_t>(sd), d_received.data,
                      std::span<const std::size_t>(rc), std::span<const std::size_t>(rd));
    EXPECT_EQ(d_received.host(), want);
  } else {
    comm.all_to_all_v(send.data(), std::span<const std::size_t>(sc), std::span<const std::size_t>(sd), received.data(),
                      std::span<const std::size_t>(rc), std::span<const std::size_t>(rd));
    EXPECT_EQ(received, want);
  }
  // broadcast from every root: root r's 4 + r values r * 1000 + k.
  for (int root = 0; root < size; ++root) {
    std::vector<long long> want_b(4 + root);
    for (std::size_t k = 0; k < want_b.size(); ++k) want_b[k] = root * 1000LL + static_cast<long long>(k);
    std::vector<long long> data = rank == root ? want_b : std::vector<long long>(want_b.size(), -1);
    if (device) {
      device_array<long long> d_data(data);
      comm.broadcast(d_data.data, data.size(), root);
      EXPECT_EQ(d_data.host(), want_b) << "broadcast from " << root;
    } else {
      comm.broadcast(data.data(), data.size(), root);
      EXPECT_EQ(data, want_b) << "broadcast from " << root;
      std::vector<long long> again = rank == root ? want_b : std::vector<long long>(want_b.size(), -1);
      comm.broadcast(mg::host_memory, again.data(), again.size(), root);
      EXPECT_EQ(again, want_b) << "broadcast from " << root << " declared host memory";
    }
  }
  if (!device) {  // the same calls declared as host memory (no pointer query)
    std::vector<int> gathered(3 * size, -1);
    comm.all_gather(mg::host_memory, mine.data(), gathered.data(), 3);
    EXPECT_EQ(gathered, expected);
    std::vector<long long> out(3, 0);
    comm.all_reduce(mg::host_memory, values.data(), out.data(), 3, mg::reduce_op::sum);
    EXPECT_EQ(out, cases[0].expect);
    std::vector<int> moved(want.size(), -1);
    comm.all_to_all_v(mg::host_memory, send.data(), std::span<const std::size_t>(sc), std::span<const std::size_t>(sd),
                      moved.data(), std::span<const std::size_t>(rc), std::span<const std::size_t>(rd));
    EXPECT_EQ(moved, want);
  }
  comm.barrier();
}

}  // namespace

TEST(MpiCommunicator, PrimitivesOnHostBuffers) {
  mg::mpi_communicator comm;
  EXPECT_EQ(comm.size(), world_size());
  EXPECT_EQ(comm.rank(), world_rank());
  exercise(comm, false);
}

TEST(MpiCommunicator, PrimitivesOnDeviceBuffers) {
  mg::device_guard guard(test_device());
  mg::mpi_communicator comm;
  // Without a CUDA-aware MPI, device data must be staged, not passed on: either way works.
  if (rank0()) std::printf("MPI CUDA-aware: %s\n", comm.cuda_aware() ? "yes" : "no");
  exercise(comm, true);
}

// The polled mode: MPI's non-blocking calls, polled.
TEST(MpiCommunicator, PrimitivesPolled) {
  mg::device_guard guard(test_device());
  mg::mpi_communicator comm;
  comm.set_waiting(mg::mpi_wait::polled);
  exercise(comm, false);
  exercise(comm, true);
}

// communicator::forever: MPI's blocking calls with nothing watching them.
TEST(MpiCommunicator, PrimitivesWaitingForEver) {
  mg::device_guard guard(test_device());
  mg::mpi_communicator comm;
  comm.set_timeout(mg::communicator::forever);
  EXPECT_TRUE(comm.waits_forever());
  exercise(comm, false);
  exercise(comm, true);
}

TEST(MpiCommunicator, BootstrapAgreesWithMpi) {
  mg::launch_info info = mg::mpi_bootstrap();
  EXPECT_EQ(info.source, "MPI");
  EXPECT_EQ(info.rank, world_rank());
  EXPECT_EQ(info.size, world_size());
  // Every rank of this test runs on one host.
  EXPECT_EQ(info.local_rank, world_rank());
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  EXPECT_EQ(mg::launch_device(info), world_rank() % devices);
}

TEST(MpiCommunicator, BadArgumentsAreTypedErrors) {
  mg::mpi_communicator comm;
  std::vector<std::size_t> wrong(static_cast<std::size_t>(comm.size()) + 1, 0);
  int x = 0;
  EXPECT_THROW(comm.all_to_all_v(&x, std::span<const std::size_t>(wrong), std::span<const std::size_t>(wrong), &x,
                                 std::span<const std::size_t>(wrong), std::span<const std::size_t>(wrong)),
               std::invalid_argument);
  EXPECT_THROW(comm.send(&x, 1, comm.size()), std::out_of_range);
  EXPECT_THROW(comm.recv(&x, 1, -1), std::out_of_range);
  EXPECT_THROW(comm.broadcast(&x, 1, comm.size()), std::out_of_range) << "no such root";
  EXPECT_THROW(mg::mpi_communicator(MPI_COMM_NULL), std::invalid_argument);
  comm.barrier();
}

// A peer that never arrives, in the polled mode: the waiting rank gets comm_error after its
// timeout, not a hang. (The default mode ends the job instead: mpi_watchdog_np2.)
TEST(MpiCommunicator, LatePeerTimesOutWhenPolled) {
  if (world_size() < 2) GTEST_SKIP() << "needs two ranks";
  mg::mpi_communicator comm;
  EXPECT_EQ(comm.waiting(), mg::mpi_wait::watchdog);
  if (comm.rank() == 0) {
    comm.set_waiting(mg::mpi_wait::polled);
    comm.set_timeout(std::chrono::milliseconds(300));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(comm.barrier(), mg::comm_error);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  } else {
    comm.set_waiting(mg::mpi_wait::polled);  // a non-blocking barrier matches only another
    if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(2));
    comm.barrier();  // matches rank 0's abandoned barrier, which MPI completes in the background
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

#if MULTIGPU_HAS_NCCL
// NCCL refuses two ranks on one GPU: with more ranks than GPUs these tests are skipped.
TEST(NcclCommunicator, PrimitivesWithOneRank) {
  if (world_size() > 1) GTEST_SKIP() << "NCCL needs one GPU per rank; run with mpirun -np 1";
  mg::mpi_communicator bootstrap;
  mg::nccl_communicator comm(bootstrap, test_device());
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.rank(), 0);
  EXPECT_GT(mg::nccl_runtime_version(), 0);
  if (rank0()) std::printf("NCCL version %d\n", mg::nccl_runtime_version());
  exercise(comm, false);
  exercise(comm, true);
  // Adopting the ncclComm_t of another communicator.
  mg::nccl_communicator adopted(comm.native());
  EXPECT_EQ(adopted.size(), 1);
  EXPECT_EQ(adopted.device(), test_device());
  exercise(adopted, true);
  adopted.set_timeout(mg::communicator::forever);  // no watchdog: CUDA's wait alone
  exercise(adopted, false);
}

// A peer that never makes the call: the waiting rank's watchdog aborts the NCCL communicator
// after the timeout and the call throws comm_error, not a hang. Needs one GPU per rank.
TEST(NcclCommunicator, LatePeerTimesOut) {
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  // Every rank must decide alike: each checks its own host (ranks on it against its GPUs).
  const int local_ranks = mg::mpi_bootstrap().local_rank + 1;
  int fits = devices >= local_ranks ? 1 : 0, all_fit = 0;
  MPI_Allreduce(&fits, &all_fit, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (world_size() < 2 || all_fit == 0)
    GTEST_SKIP() << "needs two ranks or more, each on its own GPU (NCCL refuses two ranks on one); " << devices
                 << " GPU(s) here for " << world_size() << " rank(s)";
  mg::mpi_communicator bootstrap;
  {
    mg::nccl_communicator comm(bootstrap, test_device());
    comm.set_timeout(std::chrono::seconds(2));
    EXPECT_EQ(comm.all_reduce(1, mg::reduce_op::sum), world_size());  // connected: every rank took part
    if (comm.rank() == 0) {
      const auto start = std::chrono::steady_clock::now();
      EXPECT_THROW(comm.all_reduce(1, mg::reduce_op::sum), mg::comm_error);
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
      EXPECT_THROW(comm.barrier(), std::invalid_argument);  // aborted: unusable, and says so
    }
  }  // the other ranks' finalize gives up after their timeout too
  bootstrap.barrier();
}

TEST(NcclCommunicator, UserDistributedUniqueId) {
  if (world_size() > 1) GTEST_SKIP() << "NCCL needs one GPU per rank; run with mpirun -np 1";
  mg::nccl_communicator comm(mg::nccl_communicator::make_unique_id(), 0, 1, test_device());
  EXPECT_EQ(comm.all_reduce(21, mg::reduce_op::sum), 21);
  EXPECT_THROW(mg::nccl_communicator(mg::nccl_communicator::make_unique_id(), 1, 1, test_device()),
               std::invalid_argument);
}
#endif
