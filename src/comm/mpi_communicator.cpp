#include <multigpu/comm/mpi_communicator.hpp>

#include <multigpu/core/error.hpp>

#include "call_watchdog.hpp"

#if defined(OPEN_MPI) && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace multigpu {
namespace {

constexpr int message_tag = 0x6d67;
// The pieces of an all_to_all_v travel as point-to-point messages under tags of their own.
constexpr int exchange_tag = 0x6d68;
// A message cut into pieces (pieces, below) sends every piece but the last under this tag
// plus the message's own, and the last under the message's tag: a message of one piece is a
// plain message. As in MPI, sender and receiver must agree on the size; where they do not,
// a last piece of another size is caught (comm_error), while one that happens to be as long
// as the expected last piece is not.
constexpr int piece_tag_offset = 0x100;

/// The default largest message: 1 GiB, well inside MPI's int counts and clear of the 2 GiB
/// edge where some transports have had bugs. MULTIGPU_MPI_MAX_MESSAGE (bytes) overrides it.
std::size_t default_max_message() {
  if (const char* s = std::getenv("MULTIGPU_MPI_MAX_MESSAGE")) {
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(s, &end, 10);
    if (end != s && *end == '\0' && bytes > 0 && bytes <= static_cast<unsigned long long>(INT_MAX))
      return static_cast<std::size_t>(bytes);
  }
  return std::size_t{1} << 30;
}

/// A transfer of `bytes` cut into pieces of at most `limit` bytes: piece i is
/// [offset(i), offset(i) + size(i)). An empty transfer is one empty piece, so that a send of
/// zero bytes still pairs with a receive of zero bytes.
struct pieces {
  std::size_t bytes, limit;
  std::size_t count() const noexcept { return bytes == 0 ? 1 : (bytes + limit - 1) / limit; }
  std::size_t offset(std::size_t i) const noexcept { return i * limit; }
  int size(std::size_t i) const noexcept { return static_cast<int>(std::min(limit, bytes - offset(i))); }
  int tag(std::size_t i, int message) const noexcept { return i + 1 == count() ? message : message + piece_tag_offset; }
};

/// An MPI datatype freed at scope exit.
class owned_type {
 public:
  owned_type() = default;
  ~owned_type() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  owned_type(const owned_type&) = delete;
  owned_type& operator=(const owned_type&) = delete;
  MPI_Datatype* out() noexcept { return &type_; }
  MPI_Datatype get() const noexcept { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return detail::concat("MPI error code ", code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS)
    throw comm_error(detail::concat("multigpu: ", call, " failed: ", mpi_error_string(code)));
}

MPI_Datatype mpi_type(data_type type) {
  switch (type) {
    case data_type::int8: return MPI_INT8_T;
    case data_type::uint8: return MPI_UINT8_T;
    case data_type::int32: return MPI_INT32_T;
    case data_type::uint32: return MPI_UINT32_T;
    case data_type::int64: return MPI_INT64_T;
    case data_type::uint64: return MPI_UINT64_T;
    case data_type::float32: return MPI_FLOAT;
    case data_type::float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return MPI_SUM;
    case reduce_op::prod: return MPI_PROD;
    case reduce_op::min: return MPI_MIN;
    case reduce_op::max: return MPI_MAX;
  }
  return MPI_OP_NULL;
}

void expect_mpi_running(const char* what) {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised)
    throw comm_error(detail::concat("multigpu: ", what, ": MPI is ", finalised ? "already finalised" : "not initialised",
                                    "; call MPI_Init (or MPI_Init_thread) first and MPI_Finalize after the last "
                                    "communicator is gone"));
}

void wait_for(cudaStream_t stream) {
  if (stream != nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
}

void copy(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  MULTIGPU_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
  MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream));
}

}  // namespace

/// The buffers one call hands to MPI: the caller's own, or pinned host copies of device
/// buffers when MPI is not CUDA-aware.
class mpi_communicator::staged {
 public:
  staged(mpi_communicator& comm, cudaStream_t stream) : comm_(comm), stream_(stream) { wait_for(stream); }

  const void* in(const void* p, std::size_t bytes) {
    if (!must_stage(p, bytes)) return p;
    ensure(comm_.send_stage_, bytes);
    copy(comm_.send_stage_.data(), p, bytes, stream_);
    return comm_.send_stage_.data();
  }
  /// A buffer MPI writes; `preload` copies the current contents in first (in-place reductions).
  void* out(void* p, std::size_t bytes, bool preload = false) {
    if (!must_stage(p, bytes)) return p;
    ensure(comm_.recv_stage_, bytes);
    if (preload) copy(comm_.recv_stage_.data(), p, bytes, stream_);
    out_ = p;
    out_bytes_ = bytes;
    return comm_.recv_stage_.data();
  }
  /// After MPI completed: the staged result goes to the caller's device buffer.
  void finish() {
    if (out_ != nullptr) copy(out_, comm_.recv_stage_.data(), out_bytes_, stream_);
  }

 private:
  bool must_stage(const void* p, std::size_t bytes) const {
    return bytes > 0 && !comm_.cuda_aware_ && !comm_.host_buffers() && detail::is_device_pointer(p);
  }
  static void ensure(pinned_buffer& buffer, std::size_t bytes) {
    if (buffer.size() < bytes) buffer = pinned_buffer(bytes, pinned_buffer::mapping::none);
  }
  mpi_communicator& comm_;
  cudaStream_t stream_;
  void* out_ = nullptr;
  std::size_t out_bytes_ = 0;
};

/// The MPI communicator's watchdog (call_watchdog): when a blocking call has run past its
/// limit, it says which and ends the job. Calling MPI from the watchdog's thread while the
/// caller is inside MPI is allowed only under MPI_THREAD_MULTIPLE: then the job ends with
/// MPI_Abort (or, with ULFM, the communicator is revoked first, so that the stuck call throws
/// comm_error, and the job ends only if the call is still stuck one timeout later); below it,
/// the process aborts and the launcher ends the job.
class mpi_communicator::watchdog {
 public:
  explicit watchdog(const mpi_communicator& comm)
      : comm_(comm.comm_), rank_(comm.rank_), size_(comm.size_), may_call_mpi_(thread_multiple()),
        dog_([this](const char* call, clock::duration waited,
                    clock::duration limit) { return waited > limit && expire(call, seconds(limit)); },
             [this](const char* call, clock::duration waited) { end_job(call, seconds(waited)); }) {}

  void begin(const char* call, double timeout_s) { dog_.begin(call, timeout_s); }
  void end() { dog_.end(); }

 private:
  using clock = detail::call_watchdog::clock;
  static double seconds(clock::duration d) { return std::chrono::duration<double>(d).count(); }
  static bool thread_multiple() noexcept {
    int level = MPI_THREAD_SINGLE;
    return MPI_Query_thread(&level) == MPI_SUCCESS && level == MPI_THREAD_MULTIPLE;
  }
  /// Says which call is stuck, for how long, and what happens next.
  void report(const char* call, double seconds, const char* next) const {
    std::fprintf(stderr,
                 "multigpu: %s on rank %d of %d has not returned after %.3g s: a peer died, hangs, or called "
                 "another collective. MULTIGPU_COMM_TIMEOUT_S (or communicator::set_timeout) sets the limit. %s\n",
                 call, rank_, size_, seconds, next);
    std::fflush(stderr);
  }
  /// Revokes the communicator and returns true (with ULFM under MPI_THREAD_MULTIPLE: the call
  /// gets one more timeout to return), else ends the job.
  bool expire(const char* call, double limit_s) {
#if defined(OMPI_HAVE_MPI_EXT_FTMPI) || defined(MPIX_ERR_REVOKED)
    if (may_call_mpi_) {
      report(call, limit_s, "Revoking the communicator: the call fails with comm_error on every rank.");
      MPIX_Comm_revoke(comm_);
      return true;
    }
#endif
    end_job(call, limit_s);
    return false;
  }
  /// The last step: the call is still stuck (after a revoke, one timeout later).
  [[noreturn]] void end_job(const char* call, double waited_s) const {
    report(call, waited_s, "Ending the job.");
    if (may_call_mpi_) MPI_Abort(comm_, 3);
    std::abort();  // below MPI_THREAD_MULTIPLE (or if MPI_Abort returned): the launcher ends the job
  }

  MPI_Comm comm_;
  int rank_, size_;
  bool may_call_mpi_;
  detail::call_watchdog dog_;  // last: its thread starts once the members above exist
};

/// One blocking call under the watchdog (none when waiting for ever).
class mpi_communicator::watch {
 public:
  watch(mpi_communicator& comm, const char* call) {
    if (comm.waits_forever()) return;
    if (!comm.watchdog_) comm.watchdog_ = std::make_unique<watchdog>(comm);
    dog_ = comm.watchdog_.get();
    dog_->begin(call, comm.timeout().count());
  }
  ~watch() {
    if (dog_) dog_->end();
  }
  watch(const watch&) = delete;
  watch& operator=(const watch&) = delete;

 private:
  watchdog* dog_ = nullptr;
};

bool mpi_cuda_aware() noexcept {
#if defined(MPIX_CUDA_AWARE_SUPPORT)
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

mpi_communicator::mpi_communicator(MPI_Comm comm) {
  expect_mpi_running("mpi_communicator");
  MULTIGPU_EXPECTS(comm != MPI_COMM_NULL, "mpi_communicator: MPI_COMM_NULL is not a communicator");
  check(MPI_Comm_dup(comm, &comm_), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  cuda_aware_ = mpi_cuda_aware();
  max_message_ = default_max_message();
  if (const char* w = std::getenv("MULTIGPU_MPI_WAIT"); w != nullptr && std::strcmp(w, "polled") == 0)
    waiting_ = mpi_wait::polled;
}

mpi_communicator::~mpi_communicator() {
  watchdog_.reset();  // before the communicator it names goes
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void mpi_communicator::check_call(int code, const char* call) const {
  if (code != MPI_SUCCESS)
    throw comm_error(detail::concat("multigpu: ", call, " on rank ", rank_, " of ", size_,
                                    " failed: ", mpi_error_string(code)));
}

void mpi_communicator::wait(MPI_Request* requests, int count, const char* call, MPI_Status* statuses) {
  using clock = std::chrono::steady_clock;
  const auto until = deadline();
  std::vector<MPI_Status> own(statuses == MPI_STATUSES_IGNORE ? static_cast<std::size_t>(count) : 0);
  MPI_Status* status = statuses == MPI_STATUSES_IGNORE ? own.data() : statuses;
  for (long polls = 0;; ++polls) {
    int done = 0;
    int code = MPI_Testall(count, requests, &done, status);
    if (code == MPI_ERR_IN_STATUS)  // the request's own error says more
      for (int i = 0; i < count; ++i)
        if (status[i].MPI_ERROR != MPI_SUCCESS && status[i].MPI_ERROR != MPI_ERR_PENDING) code = status[i].MPI_ERROR;
    check_call(code, call);
    if (done) return;
    if (clock::now() > until)
      throw comm_error(detail::concat("multigpu: ", call, " on rank ", rank_, " of ", size_, " timed out after ",
                                      timeout().count(), " s: a peer failed or did not make the same call "
                                      "(MULTIGPU_COMM_TIMEOUT_S sets the limit); the communicator is unusable"));
    if (polls > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

template <class Blocking, class Post>
void mpi_communicator::complete(const char* call, const char* blocking_name, const char* post_name, Blocking blocking,
                                Post post) {
  if (blocks()) {
    const watch watched(*this, call);
    check_call(blocking(), blocking_name);
    return;
  }
  MPI_Request request;
  check(post(&request), post_name);
  wait(&request, 1, call);
}

void mpi_communicator::reserve_staging(std::size_t send_bytes, std::size_t recv_bytes) {
  if (cuda_aware_) return;
  if (send_stage_.size() < send_bytes) send_stage_ = pinned_buffer(send_bytes, pinned_buffer::mapping::none);
  if (recv_stage_.size() < recv_bytes) recv_stage_ = pinned_buffer(recv_bytes, pinned_buffer::mapping::none);
}

void mpi_communicator::set_max_message_bytes(std::size_t bytes) {
  MULTIGPU_EXPECTS(bytes > 0 && bytes <= static_cast<std::size_t>(INT_MAX),
                   detail::concat("mpi_communicator::set_max_message_bytes: ", bytes,
                                  " is not between 1 and INT_MAX (the largest MPI count)"));
  max_message_ = bytes;
}

void mpi_communicator::wait_all(std::vector<MPI_Request>& requests, std::vector<MPI_Status>& statuses,
                                const char* call) {
  if (requests.empty()) return;
  const int count = static_cast<int>(requests.size());
  statuses.resize(requests.size());
  if (!blocks()) {
    wait(requests.data(), count, call, statuses.data());
    return;
  }
  const watch watched(*this, call);
  int code = MPI_Waitall(count, requests.data(), statuses.data());
  if (code == MPI_ERR_IN_STATUS)  // the request's own error says more
    for (const MPI_Status& status : statuses)
      if (status.MPI_ERROR != MPI_SUCCESS && status.MPI_ERROR != MPI_ERR_PENDING) code = status.MPI_ERROR;
  check_call(code, "MPI_Waitall");
}

void mpi_communicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream) {
  const std::size_t total = bytes * static_cast<std::size_t>(size_);
  staged buffers(*this, stream);
  const auto* s = static_cast<const std::byte*>(buffers.in(send, bytes));
  auto* r = static_cast<std::byte*>(buffers.out(recv, total));
  if (total <= max_message_) {
    const int n = static_cast<int>(bytes);
    complete(
        "all_gather", "MPI_Allgather", "MPI_Iallgather",
        [&] { return MPI_Allgather(s, n, MPI_BYTE, r, n, MPI_BYTE, comm_); },
        [&](MPI_Request* request) { return MPI_Iallgather(s, n, MPI_BYTE, r, n, MPI_BYTE, comm_, request); });
    buffers.finish();
    return;
  }
  // Over the limit: each rank's block in pieces. Piece i of every block is gathered at once,
  // into a type whose extent is a whole block, so that rank r's piece lands at r * bytes + offset.
  // Every rank knows bytes and size(), so every rank makes the same calls.
  const pieces cut{bytes, std::max<std::size_t>(1, max_message_ / static_cast<std::size_t>(size_))};
  for (std::size_t i = 0; i < cut.count(); ++i) {
    const int n = cut.size(i);
    owned_type contiguous, spaced;
    check(MPI_Type_contiguous(n, MPI_BYTE, contiguous.out()), "MPI_Type_contiguous");
    check(MPI_Type_create_resized(contiguous.get(), 0, static_cast<MPI_Aint>(bytes), spaced.out()),
          "MPI_Type_create_resized");
    check(MPI_Type_commit(spaced.out()), "MPI_Type_commit");
    const std::byte* from = s + cut.offset(i);
    std::byte* to = r + cut.offset(i);
    complete(
        "all_gather", "MPI_Allgather", "MPI_Iallgather",
        [&] { return MPI_Allgather(from, n, MPI_BYTE, to, 1, spaced.get(), comm_); },
        [&](MPI_Request* request) { return MPI_Iallgather(from, n, MPI_BYTE, to, 1, spaced.get(), comm_, request); });
  }
  buffers.finish();
}

void mpi_communicator::all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                                  cudaStream_t stream) {
  const std::size_t width = size_of(type);
  const std::size_t bytes = count * width;
  staged buffers(*this, stream);
  const bool in_place = send == recv;
  auto* r = static_cast<std::byte*>(buffers.out(recv, bytes, in_place));
  const auto* s = in_place ? nullptr : static_cast<const std::byte*>(buffers.in(send, bytes));
  // Pieces of at most max_message_bytes() (one for any count that fits): every rank has the
  // same count, so every rank makes the same calls.
  const pieces cut{count, std::max<std::size_t>(1, max_message_ / width)};
  for (std::size_t i = 0; i < cut.count(); ++i) {
    const int n = cut.size(i);
    const std::size_t at = cut.offset(i) * width;
    const void* from = in_place ? MPI_IN_PLACE : static_cast<const void*>(s + at);
    void* to = r + at;
    complete(
        "all_reduce", "MPI_Allreduce", "MPI_Iallreduce",
        [&] { return MPI_Allreduce(from, to, n, mpi_type(type), mpi_op(op), comm_); },
        [&](MPI_Request* request) { return MPI_Iallreduce(from, to, n, mpi_type(type), mpi_op(op), comm_, request); });
  }
  buffers.finish();
}

void mpi_communicator::send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv,
                                       std::size_t recv_bytes, int recv_from, cudaStream_t stream) {
  if (send_to != -1) check_peer("send_recv", send_to);
  if (recv_from != -1) check_peer("send_recv", recv_from);
  staged buffers(*this, stream);
  MPI_Status status{};
  void* r = recv_from == -1 ? nullptr : buffers.out(recv, recv_bytes);
  auto check_received = [&](const MPI_Status& got, std::size_t expected, std::size_t offset) {
    int received = 0;
    check(MPI_Get_count(&got, MPI_BYTE, &received), "MPI_Get_count");
    if (static_cast<std::size_t>(received) != expected)
      throw comm_error(detail::concat("multigpu: rank ", rank_, " expected ", recv_bytes, " bytes from rank ",
                                      recv_from, " but got ", offset + static_cast<std::size_t>(received)));
  };
  if (send_bytes > max_message_ || recv_bytes > max_message_) {
    // Larger than one message: both directions in pieces, posted at once and waited for
    // together. Sender and receiver cut the same byte count the same way.
    const pieces out{send_bytes, max_message_}, in{recv_bytes, max_message_};
    // Staged before any receive is posted: a failure here leaves nothing pending.
    const auto* s = send_to == -1 ? nullptr : static_cast<const std::byte*>(buffers.in(send, send_bytes));
    std::vector<MPI_Request> requests;
    std::vector<MPI_Status> statuses;
    const std::size_t receives = recv_from == -1 ? 0 : in.count();
    requests.reserve(receives + (send_to == -1 ? 0 : out.count()));
    for (std::size_t i = 0; i < receives; ++i) {
      requests.push_back(MPI_REQUEST_NULL);
      check(MPI_Irecv(static_cast<std::byte*>(r) + in.offset(i), in.size(i), MPI_BYTE, recv_from, in.tag(i, message_tag), comm_,
                      &requests.back()),
            "MPI_Irecv");
    }
    if (send_to != -1) {
      for (std::size_t i = 0; i < out.count(); ++i) {
        requests.push_back(MPI_REQUEST_NULL);
        check(MPI_Isend(s + out.offset(i), out.size(i), MPI_BYTE, send_to, out.tag(i, message_tag), comm_,
                        &requests.back()),
              "MPI_Isend");
      }
    }
    wait_all(requests, statuses, "send_recv");
    for (std::size_t i = 0; i < receives; ++i)
      check_received(statuses[i], static_cast<std::size_t>(in.size(i)), in.offset(i));
    buffers.finish();
    return;
  }
  const int send_n = static_cast<int>(send_bytes), recv_n = static_cast<int>(recv_bytes);
  auto check_one = [&] { check_received(status, recv_bytes, 0); };
  if (blocks()) {
    const watch watched(*this, "send_recv");
    const void* sent = send_to == -1 ? nullptr : buffers.in(send, send_bytes);
    if (send_to != -1 && recv_from != -1)
      check_call(MPI_Sendrecv(sent, send_n, MPI_BYTE, send_to, message_tag, r, recv_n, MPI_BYTE, recv_from,
                              message_tag, comm_, &status),
                 "MPI_Sendrecv");
    else if (send_to != -1)
      check_call(MPI_Send(sent, send_n, MPI_BYTE, send_to, message_tag, comm_), "MPI_Send");
    else if (recv_from != -1)
      check_call(MPI_Recv(r, recv_n, MPI_BYTE, recv_from, message_tag, comm_, &status), "MPI_Recv");
    if (recv_from != -1) check_one();
    buffers.finish();
    return;
  }
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  if (recv_from != -1)
    check(MPI_Irecv(r, recv_n, MPI_BYTE, recv_from, message_tag, comm_, &requests[0]), "MPI_Irecv");
  if (send_to != -1)
    check(MPI_Isend(buffers.in(send, send_bytes), send_n, MPI_BYTE, send_to, message_tag, comm_, &requests[1]),
          "MPI_Isend");
  // A receive that fails or times out must not leave the send pending: the next call would
  // reuse its staging buffer while MPI still reads it.
  auto finish_send_then_rethrow = [&] {
    if (requests[1] != MPI_REQUEST_NULL) {
      try {
        wait(&requests[1], 1, "send");
      } catch (...) {
        // The receive's error is the one to report.
      }
    }
    throw;
  };
  if (recv_from != -1) try {
    // Wait for the receive first, keeping its status to check the size.
    wait(&requests[0], 1, "recv", &status);
    check_one();
  } catch (...) {
    finish_send_then_rethrow();
  }
  wait(&requests[1], 1, "send");
  buffers.finish();
}

void mpi_communicator::all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                                          std::span<const std::size_t> send_displs, void* recv,
                                          std::span<const std::size_t> recv_counts,
                                          std::span<const std::size_t> recv_displs, cudaStream_t stream) {
  detail::expect_per_rank("all_to_all_v", send_counts.size(), size_);
  detail::expect_per_rank("all_to_all_v", send_displs.size(), size_);
  detail::expect_per_rank("all_to_all_v", recv_counts.size(), size_);
  detail::expect_per_rank("all_to_all_v", recv_displs.size(), size_);
  MULTIGPU_EXPECTS(send_counts[rank_] == recv_counts[rank_],
                   detail::concat("all_to_all_v: rank ", rank_, " sends ", send_counts[rank_],
                                  " bytes to itself but expects ", recv_counts[rank_]));
  std::size_t send_extent = 0, recv_extent = 0;
  for (int r = 0; r < size_; ++r) {
    if (send_counts[r]) send_extent = std::max(send_extent, send_displs[r] + send_counts[r]);
    if (recv_counts[r]) recv_extent = std::max(recv_extent, recv_displs[r] + recv_counts[r]);
  }
  staged buffers(*this, stream);
  const auto* s = static_cast<const std::byte*>(buffers.in(send, send_extent));
  // Bytes between the blocks keep their values: staged, they are copied in first (blocks that
  // cover the whole extent leave none).
  auto* r = static_cast<std::byte*>(
      buffers.out(recv, recv_extent, !detail::blocks_cover(recv_counts, recv_displs, recv_extent)));
  // Point-to-point, as MPI's own linear all-to-all does it, so that no count or displacement
  // is an int: every receive posted, then every send, each block in pieces of at most
  // max_message_bytes(). A rank knows what it sends and receives, so the pieces pair up with
  // no agreement. The block to itself is a copy.
  // The block to itself first: a copy that fails leaves no request pending.
  if (send_counts[rank_] > 0) {
    std::byte* to = r + recv_displs[rank_];
    const std::byte* from = s + send_displs[rank_];
    if (cuda_aware_ && !host_buffers()) detail::copy_bytes(to, from, send_counts[rank_], stream);
    else std::memmove(to, from, send_counts[rank_]);
  }
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  struct posted_receive {
    int from, bytes;
  };
  std::vector<posted_receive> posted;  // per receive, in posting order
  for (int step = 1; step < size_; ++step) {
    const int from = (rank_ + size_ - step) % size_;
    if (recv_counts[from] == 0) continue;
    const pieces in{recv_counts[from], max_message_};
    for (std::size_t i = 0; i < in.count(); ++i) {
      requests.push_back(MPI_REQUEST_NULL);
      posted.push_back({from, in.size(i)});
      check(MPI_Irecv(r + recv_displs[from] + in.offset(i), in.size(i), MPI_BYTE, from, in.tag(i, exchange_tag), comm_,
                      &requests.back()),
            "MPI_Irecv");
    }
  }
  const std::size_t receives = requests.size();
  for (int step = 1; step < size_; ++step) {
    const int to = (rank_ + step) % size_;
    if (send_counts[to] == 0) continue;
    const pieces out{send_counts[to], max_message_};
    for (std::size_t i = 0; i < out.count(); ++i) {
      requests.push_back(MPI_REQUEST_NULL);
      check(MPI_Isend(s + send_displs[to] + out.offset(i), out.size(i), MPI_BYTE, to, out.tag(i, exchange_tag), comm_,
                      &requests.back()),
            "MPI_Isend");
    }
  }
  wait_all(requests, statuses, "all_to_all_v");
  // A piece shorter than posted: the sender cut another byte count.
  for (std::size_t i = 0; i < receives; ++i) {
    int received = 0;
    check(MPI_Get_count(&statuses[i], MPI_BYTE, &received), "MPI_Get_count");
    if (received != posted[i].bytes)
      throw comm_error(detail::concat("multigpu: all_to_all_v: rank ", rank_, " expected ",
                                      recv_counts[posted[i].from], " bytes from rank ", posted[i].from,
                                      ", which sent another amount"));
  }
  buffers.finish();
}

void mpi_communicator::broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream) {
  check_peer("broadcast", root);
  staged buffers(*this, stream);
  auto* d = static_cast<std::byte*>(buffers.out(data, bytes, rank_ == root));  // the root's bytes in, everyone's out
  // Pieces of at most max_message_bytes(): every rank has the same byte count.
  const pieces cut{bytes, max_message_};
  for (std::size_t i = 0; i < cut.count(); ++i) {
    std::byte* at = d + cut.offset(i);
    const int n = cut.size(i);
    complete(
        "broadcast", "MPI_Bcast", "MPI_Ibcast", [&] { return MPI_Bcast(at, n, MPI_BYTE, root, comm_); },
        [&](MPI_Request* request) { return MPI_Ibcast(at, n, MPI_BYTE, root, comm_, request); });
  }
  buffers.finish();
}

void mpi_communicator::barrier() {
  complete("barrier", "MPI_Barrier", "MPI_Ibarrier", [&] { return MPI_Barrier(comm_); },
           [&](MPI_Request* request) { return MPI_Ibarrier(comm_, request); });
}

launch_info mpi_bootstrap() {
  int initialised = 0, finalised = 0;
  MPI_Initialized(&initialised);
  MPI_Finalized(&finalised);
  if (!initialised || finalised) return bootstrap();
  launch_info info;
  info.source = "MPI";
  check(MPI_Comm_rank(MPI_COMM_WORLD, &info.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &info.size), "MPI_Comm_size");
  MPI_Comm local;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, info.rank, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
  int code = MPI_Comm_rank(local, &info.local_rank);
  MPI_Comm_free(&local);
  check(code, "MPI_Comm_rank");
  return info;
}

}  // namespace multigpu
