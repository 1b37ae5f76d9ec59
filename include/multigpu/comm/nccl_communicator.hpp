#pragma once
// The NCCL communicator (target multigpu::nccl, package component `nccl`): one rank per GPU,
// collectives enqueued on a CUDA stream of that GPU. NCCL itself (libnccl.so.2) is opened at
// run time: without it, constructing one throws comm_error saying so, and everything else in
// the library keeps working. MULTIGPU_NCCL_LIBRARY names another library file.
//
// The NCCL communicator is non-blocking (ncclConfig_t::blocking = 0): creating it returns at
// once and is settled by polling ncclCommGetAsyncError, so that a rank that never joins is a
// comm_error after timeout(), not a hang; so is any call that NCCL answers with
// ncclInProgress (connection setup on first use). Device buffers go to NCCL as they are, on
// the caller's stream; host buffers are staged through device memory. Each call enqueues its
// NCCL operation and waits for it in CUDA's event wait, with no polling loop; a watchdog
// thread (the one the MPI communicator uses too), started at the first call, looks eight times
// per timeout at how long the wait has run and at ncclCommGetAsyncError. An NCCL error or no
// progress within timeout() (between one and one and a quarter timeouts: a dead or absent
// peer) makes it abort the NCCL communicator (ncclCommAbort), which ends NCCL's kernels; the
// waiting call then throws comm_error, and the communicator is unusable afterwards (an adopted
// one is aborted too: its owner must not destroy it). The timeout counts from the start of the
// wait, so work queued earlier on the same stream counts; NCCL's abort waits for such work,
// and a wait still not over one timeout after the abort began ends the process.
//
// NCCL refuses two ranks on one GPU (measured with NCCL 2.28: ncclInvalidUsage), so a
// one-GPU machine runs NCCL with one rank only.

#include <multigpu/comm/communicator.hpp>

#include <nccl.h>

#include <memory>

namespace multigpu {

/// Whether libnccl can be opened here, and its version (ncclGetVersion, e.g. 22803), or 0.
bool nccl_runtime_available() noexcept;
int nccl_runtime_version() noexcept;

class nccl_communicator final : public communicator {
 public:
  /// A fresh unique id (rank 0 makes it, the others receive it).
  static ncclUniqueId make_unique_id();

  /// Collective over `bootstrap` (for example an mpi_communicator): its rank 0 makes the
  /// unique id and sends it to every rank, then each rank joins with ncclCommInitRank on
  /// `device`, with the bootstrap's rank and size.
  nccl_communicator(communicator& bootstrap, int device);
  /// Joins with a unique id the caller distributed itself (rank in [0, size)).
  nccl_communicator(const ncclUniqueId& id, int rank, int size, int device);
  /// Uses an existing NCCL communicator; the caller keeps ownership (it is not destroyed).
  explicit nccl_communicator(ncclComm_t comm);
  ~nccl_communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* engine() const noexcept override { return "nccl"; }
  bool accepts_device_buffers(int device) const noexcept override { return device == device_; }
  ncclComm_t native() const noexcept { return comm_; }
  int device() const noexcept { return device_; }

  using communicator::all_gather_bytes;
  void all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream = nullptr) override;
  using communicator::all_reduce;
  void all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                  cudaStream_t stream = nullptr) override;
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t stream = nullptr) override;
  using communicator::all_to_all_v_bytes;
  void all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, void* recv,
                          std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                          cudaStream_t stream = nullptr) override;
  using communicator::broadcast_bytes;
  void broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream = nullptr) override;
  void barrier() override;

 private:
  class staged;
  class watchdog;
  void init(const ncclUniqueId& id, int rank, int size, int device);
  /// The communicator's own stream and the event each wait records (both or neither).
  void create_stream_and_event();
  /// Throws comm_error for a failed NCCL call; settles one that returned ncclInProgress.
  void check(ncclResult_t result, const char* call);
  /// Polls ncclCommGetAsyncError until the non-blocking call in progress ends, and returns its
  /// result; after timeout() aborts the communicator and throws comm_error.
  ncclResult_t settle(const char* call);
  /// Waits for the call enqueued on `stream` (see the top of this file).
  void wait(cudaStream_t stream, const char* call);
  void* scratch(int which, std::size_t bytes);
  cudaStream_t pick(cudaStream_t stream) const noexcept { return stream != nullptr ? stream : stream_; }

  ncclComm_t comm_ = nullptr;
  bool owned_ = false;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t done_ = nullptr;  // recorded after each call's operation
  std::unique_ptr<watchdog> watchdog_;  // started at the first watched wait
  void* scratch_[2] = {nullptr, nullptr};  // device staging for host buffers: send, receive
  std::size_t scratch_bytes_[2] = {0, 0};
};

}  // namespace multigpu
