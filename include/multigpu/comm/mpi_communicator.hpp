#pragma once
// The MPI communicator (target multigpu::mpi, package component `mpi`). Built on a duplicate
// of the caller's MPI_Comm, with MPI_ERRORS_RETURN on it, so that MPI errors become
// comm_error and the library's messages never collide with the caller's.
//
// Device buffers: when MPIX_Query_cuda_support() says the MPI library is CUDA-aware they go
// to MPI directly; otherwise (Open MPI as Debian builds it) they are staged through pinned
// host buffers, since a device pointer passed to such an MPI crashes it.
//
// A peer that does not arrive (it died, hangs, or called something else), two ways
// (mpi_wait):
// - mpi_wait::watchdog (the default): every call is MPI's blocking one (MPI_Allreduce,
//   MPI_Allgather, MPI_Bcast, MPI_Barrier, MPI_Sendrecv; all_to_all_v posts point-to-point
//   messages and blocks in MPI_Waitall), at the MPI library's own speed.
//   A watchdog thread, started at the first call, watches the call in flight; when one has
//   not returned after timeout(), it prints which call on which rank it was waiting for and
//   ends the job (as PyTorch's NCCL watchdog does): with MPI_Abort when MPI runs at
//   MPI_THREAD_MULTIPLE, else by aborting the process, which makes the launcher end the job.
//   Under MPI_THREAD_MULTIPLE with the fault-tolerance extension (ULFM) it revokes the
//   communicator first, so that the stuck call throws comm_error on every rank, and ends the
//   job only if the call is still stuck one timeout later.
// - mpi_wait::polled: each call posts MPI's non-blocking operation and polls it until it
//   completes or timeout() passes, then throws comm_error. The job keeps running, but MPI
//   cannot withdraw a posted collective, so the communicator is unusable afterwards; and the
//   polling starves MPI's progress (Open MPI 4.1's non-blocking collectives on host buffers
//   run 2 to 15 times slower than its blocking ones).
// With timeout() == communicator::forever both use the blocking calls and nothing watches.
// Every rank must use the same mode: MPI never matches a blocking collective with a
// non-blocking one, so ranks in different modes hang (or time out) in their first collective.

#include <multigpu/comm/bootstrap.hpp>
#include <multigpu/comm/communicator.hpp>
#include <multigpu/memory/pinned_buffer.hpp>

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace multigpu {

/// How an mpi_communicator waits for its peers (see the top of this file).
enum class mpi_wait {
  /// Blocking calls; a watchdog aborts the job (or revokes, with ULFM) after timeout().
  watchdog,
  /// Non-blocking calls polled until timeout(), then comm_error.
  polled,
};

class mpi_communicator final : public communicator {
 public:
  /// Duplicates `comm` (collective over it). Throws comm_error when MPI is not initialised
  /// or already finalised.
  explicit mpi_communicator(MPI_Comm comm = MPI_COMM_WORLD);
  ~mpi_communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* engine() const noexcept override { return "mpi"; }
  bool accepts_device_buffers(int) const noexcept override { return true; }
  /// The duplicated communicator this one runs on.
  MPI_Comm native() const noexcept { return comm_; }
  /// True when device buffers go to MPI directly (MPIX_Query_cuda_support()).
  bool cuda_aware() const noexcept { return cuda_aware_; }
  /// How calls wait for peers; mpi_wait::watchdog unless set (MULTIGPU_MPI_WAIT=polled also
  /// sets it). The same on every rank; not while a call of this communicator runs.
  mpi_wait waiting() const noexcept { return waiting_; }
  void set_waiting(mpi_wait w) noexcept { waiting_ = w; }
  /// The largest message this communicator hands MPI at once. Larger transfers, of any
  /// size_t byte count, go in pieces of at most this many bytes, so that no MPI count or
  /// displacement overflows an int: each all_gather, all_reduce and broadcast in rounds of
  /// MPI's collective, each send_recv and all_to_all_v block in several point-to-point
  /// messages. 1 GiB unless set (or MULTIGPU_MPI_MAX_MESSAGE, in bytes). The same on every
  /// rank; not while a call of this communicator runs.
  std::size_t max_message_bytes() const noexcept { return max_message_; }
  /// std::invalid_argument unless 1 <= bytes <= INT_MAX.
  void set_max_message_bytes(std::size_t bytes);

  /// Grows the pinned staging buffers to these sizes when device buffers are staged (MPI not
  /// CUDA-aware); nothing otherwise.
  void reserve_staging(std::size_t send_bytes, std::size_t recv_bytes) override;

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
  class watch;
  /// Polls until the requests complete (their statuses into `statuses`, if wanted) or
  /// timeout() passes (mpi_wait::polled).
  void wait(MPI_Request* requests, int count, const char* call, MPI_Status* statuses = MPI_STATUSES_IGNORE);
  /// Every request completed, their statuses in `statuses`: MPI_Waitall under the watchdog
  /// when blocks(), else wait().
  void wait_all(std::vector<MPI_Request>& requests, std::vector<MPI_Status>& statuses, const char* call);
  /// True when calls are MPI's blocking ones.
  bool blocks() const noexcept { return waits_forever() || waiting_ == mpi_wait::watchdog; }
  /// One collective: `blocking()` (MPI's blocking call, named `blocking_name`, watched unless
  /// waiting for ever) when blocks(), else `post(&request)` (its non-blocking form) polled by
  /// wait(). Both return MPI codes.
  template <class Blocking, class Post>
  void complete(const char* call, const char* blocking_name, const char* post_name, Blocking blocking, Post post);
  /// Throws comm_error for a failed MPI call, naming the call, this rank and the team size.
  void check_call(int code, const char* call) const;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool cuda_aware_ = false;
  mpi_wait waiting_ = mpi_wait::watchdog;
  std::size_t max_message_ = std::size_t{1} << 30;
  pinned_buffer send_stage_, recv_stage_;
  std::unique_ptr<watchdog> watchdog_;  // started at the first watched call
};

/// True when the linked MPI reports CUDA support at run time (MPIX_Query_cuda_support, an
/// Open MPI extension; false where the MPI has none).
bool mpi_cuda_aware() noexcept;

/// The launch_info from MPI when it is initialised (rank and size of MPI_COMM_WORLD, local
/// rank from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), else from the environment as
/// bootstrap() does.
launch_info mpi_bootstrap();

}  // namespace multigpu
