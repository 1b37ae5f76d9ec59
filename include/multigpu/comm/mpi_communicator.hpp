#pragma once
// The MPI communicator (target multigpu::mpi, package component `mpi`). Built on a duplicate
// of the caller's MPI_Comm, with MPI_ERRORS_RETURN on it, so that MPI errors become
// comm_error and the library's messages never collide with the caller's.
//
// Device buffers: when MPIX_Query_cuda_support() says the MPI library is CUDA-aware they go
// to MPI directly; otherwise (Open MPI as Debian builds it) they are staged through pinned
// host buffers, since a device pointer passed to such an MPI crashes it.
//
// Each call posts a non-blocking MPI operation and polls it until it completes or timeout()
// passes; then it throws comm_error (a peer died or skipped the call). MPI cannot withdraw a
// posted collective, so after a timeout the communicator, and usually the job, is unusable:
// call MPI_Abort. With timeout() == communicator::forever the calls are MPI's blocking ones
// (MPI_Allreduce, MPI_Allgather, MPI_Alltoallv, MPI_Barrier; point to point waits with
// MPI_Wait): no timeout, and the speed of the MPI library's blocking collectives, which on
// OpenMPI 4.1 with host buffers are 2 to 5 times faster than its non-blocking ones.

#include <multigpu/comm/bootstrap.hpp>
#include <multigpu/comm/communicator.hpp>
#include <multigpu/memory/pinned_buffer.hpp>

#include <mpi.h>

#include <memory>

namespace multigpu {

class mpi_communicator final : public communicator {
 public:
  /// Duplicates `comm` (collective over it). Throws comm_error when MPI is not initialised
  /// or already finalised.
  explicit mpi_communicator(MPI_Comm comm = MPI_COMM_WORLD);
  ~mpi_communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* engine() const noexcept override { return "mpi"; }
  /// The duplicated communicator this one runs on.
  MPI_Comm native() const noexcept { return comm_; }
  /// True when device buffers go to MPI directly (MPIX_Query_cuda_support()).
  bool cuda_aware() const noexcept { return cuda_aware_; }

  void all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream = nullptr) override;
  using communicator::all_reduce;
  void all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                  cudaStream_t stream = nullptr) override;
  void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv, std::size_t recv_bytes,
                       int recv_from, cudaStream_t stream = nullptr) override;
  void all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, void* recv,
                          std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                          cudaStream_t stream = nullptr) override;
  void barrier() override;

 private:
  class staged;
  void wait(MPI_Request* requests, int count, const char* call);
  /// One collective: `blocking()` (MPI's blocking call, named `blocking_name`) when waiting for
  /// ever, else `post(&request)` (its non-blocking form) polled by wait(). Both return MPI codes.
  template <class Blocking, class Post>
  void complete(const char* call, const char* blocking_name, const char* post_name, Blocking blocking, Post post);
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool cuda_aware_ = false;
  pinned_buffer send_stage_, recv_stage_;
};

/// True when the linked MPI reports CUDA support at run time (MPIX_Query_cuda_support, an
/// Open MPI extension; false where the MPI has none).
bool mpi_cuda_aware() noexcept;

/// The launch_info from MPI when it is initialised (rank and size of MPI_COMM_WORLD, local
/// rank from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)), else from the environment as
/// bootstrap() does.
launch_info mpi_bootstrap();

}  // namespace multigpu
