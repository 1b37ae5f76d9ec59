#pragma once
// The communicator: what the team algorithms need from a transport between processes. Three
// engines implement it: in_process_communicator (one rank, no MPI), mpi_communicator
// (multigpu::mpi) and nccl_communicator (multigpu::nccl). Host code only.
//
// As in CCCL's multi-GPU communicator concept, a transport must provide rank(), size(),
// engine() and one point-to-point operation, send_recv_bytes. The collectives (all_gather,
// all_reduce, all_to_all_v, broadcast, barrier) are optional: each has a fallback built on
// send_recv_bytes (rings and a binomial tree), which a transport overrides with its native
// collective. The three engines override every one. Bring your own transport by deriving
// from communicator and overriding at least send_recv_bytes (docs/scale-out.md).
//
// Buffers may be host or device memory; each engine moves them the way it can (MPI stages
// device data through pinned host memory unless it is CUDA-aware, NCCL stages host data
// through device memory). Every call starts after the work already enqueued on `stream` and
// returns when its result is in place (blocking): MPI has no stream semantics. A peer that
// does not arrive within timeout() ends the job or throws comm_error (see timeout()).
//
// Every rank of a communicator must make the same collective calls in the same order, with
// matching sizes (as in MPI). team algorithms check this (see team.hpp).

#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace multigpu {

/// A transport failed, timed out or was misused across ranks. what() carries the engine's
/// own error string (MPI_Error_string, ncclGetErrorString) where there is one.
class comm_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The built-in reduction operators that every engine runs natively.
enum class reduce_op { sum, prod, min, max };

/// The arithmetic element types that every engine reduces natively.
enum class data_type { int8, uint8, int32, uint32, int64, uint64, float32, float64 };

std::size_t size_of(data_type type) noexcept;
const char* name_of(data_type type) noexcept;
const char* name_of(reduce_op op) noexcept;

namespace detail {
template <class T>
constexpr bool always_false = false;

/// The data_type of an arithmetic T (by size and signedness; bool is not one).
template <class T>
constexpr data_type data_type_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, float>) return data_type::float32;
  else if constexpr (std::is_same_v<U, double>) return data_type::float64;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 1)
    return std::is_signed_v<U> ? data_type::int8 : data_type::uint8;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 4)
    return std::is_signed_v<U> ? data_type::int32 : data_type::uint32;
  else if constexpr (std::is_integral_v<U> && !std::is_same_v<U, bool> && sizeof(U) == 8)
    return std::is_signed_v<U> ? data_type::int64 : data_type::uint64;
  else static_assert(always_false<T>, "multigpu: no built-in reduction for this element type");
}

template <class T>
concept reducible_type = std::is_arithmetic_v<T> && !std::is_same_v<std::remove_cv_t<T>, bool> &&
                         (std::is_floating_point_v<T> ? (sizeof(T) == 4 || sizeof(T) == 8)
                                                      : (sizeof(T) == 1 || sizeof(T) == 4 || sizeof(T) == 8)) &&
                         !std::is_same_v<std::remove_cv_t<T>, long double>;

/// True when p points to device (or managed) memory. Host memory, pinned or not, and any
/// pointer on a machine without a GPU is host memory.
bool is_device_pointer(const void* p) noexcept;
/// Copies bytes between any two host or device buffers, on `stream` where a device is involved,
/// and waits for the copy.
void copy_bytes(void* dst, const void* src, std::size_t bytes, cudaStream_t stream = nullptr);
/// True when the non-empty blocks [displs[r], + counts[r]) tile [0, extent) exactly: a staged
/// receive buffer then needs none of its old contents.
bool blocks_cover(std::span<const std::size_t> counts, std::span<const std::size_t> displs, std::size_t extent);
/// Throws std::invalid_argument unless a per-rank array has one entry per rank.
void expect_per_rank(const char* call, std::size_t entries, int size);
}  // namespace detail

/// Tag for a call whose buffers are all host memory (pageable or pinned), as in
/// `comm.all_reduce(host_memory, data, data, n, reduce_op::sum)`. Without it an engine that
/// moves host and device memory differently (MPI without CUDA support, NCCL, the in-process
/// copies) asks the CUDA driver about every buffer of every call (cudaPointerGetAttributes):
/// tens of nanoseconds a call, up to a tenth of a one-float MPI_Allreduce between two
/// processes of one host.
/// Handing device memory to a call with the tag is undefined behaviour. The team algorithms
/// use it for their host buffers.
struct host_memory_t {
  explicit host_memory_t() = default;
};
inline constexpr host_memory_t host_memory{};

class communicator {
 public:
  virtual ~communicator() = default;
  communicator() = default;
  communicator(const communicator&) = delete;
  communicator& operator=(const communicator&) = delete;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "in-process", "mpi" or "nccl".
  virtual const char* engine() const noexcept = 0;
  /// True when every call takes buffers in the memory of `device`, whether the engine moves
  /// them itself or stages them: the in-process and MPI engines, any device; NCCL, its own
  /// device. False by default, for a transport of one's own that moves host memory only. Team
  /// algorithms then exchange device buffers directly (exchange_path in team.hpp).
  virtual bool accepts_device_buffers(int device) const noexcept {
    (void)device;
    return false;
  }

  /// Makes ready what a coming call on device buffers of these sizes needs besides the
  /// buffers (the MPI engine's pinned staging when MPI is not CUDA-aware), so that running out
  /// of memory happens here, in a step the caller can agree on with its peers (team.hpp),
  /// rather than inside the collective while the peers wait. Nothing by default.
  virtual void reserve_staging(std::size_t send_bytes, std::size_t recv_bytes) {
    (void)send_bytes;
    (void)recv_bytes;
  }

  /// How long a call waits for its peers. The default is 300 s, or MULTIGPU_COMM_TIMEOUT_S
  /// seconds when that variable is set. What happens then depends on the engine: the MPI
  /// communicator's watchdog ends the job with a message naming the stuck call (or throws
  /// comm_error in its polled mode, mpi_communicator.hpp); NCCL aborts its communicator and
  /// throws comm_error. After a timeout the communicator is unusable.
  ///
  /// `forever` (or MULTIGPU_COMM_TIMEOUT_S=inf) waits for ever: a dead peer is then a hang,
  /// not an error.
  static constexpr std::chrono::duration<double> forever{std::numeric_limits<double>::infinity()};
  std::chrono::duration<double> timeout() const noexcept { return timeout_; }
  /// std::invalid_argument unless t is positive (or `forever`).
  void set_timeout(std::chrono::duration<double> t);
  /// True when timeout() is `forever`.
  bool waits_forever() const noexcept { return std::isinf(timeout_.count()); }

  // ---- Required: the point-to-point primitive ----

  /// Sends to `send_to` and receives from `recv_from` at once (either may be -1: none), so
  /// that rings and neighbour exchanges cannot deadlock. A receive expects exactly
  /// `recv_bytes` (zero is allowed, and still pairs with a send of zero bytes).
  virtual void send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv,
                               std::size_t recv_bytes, int recv_from, cudaStream_t stream = nullptr) = 0;

  // ---- Optional: collectives, each with a fallback over send_recv_bytes ----

  /// recv holds size() * bytes: rank r's `bytes` at recv + r * bytes. Fallback: a ring,
  /// size() - 1 steps of `bytes` each.
  virtual void all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream = nullptr);
  /// Element-wise reduction of `count` elements of `type` over all ranks; every rank gets the
  /// same bits. send == recv is allowed. Fallback: a ring reduce-scatter then a ring
  /// all-gather through host memory (each rank sends 2 (size() - 1) / size() of the data),
  /// reducing on the host.
  virtual void all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                          cudaStream_t stream = nullptr);
  /// Rank r's block [send_displs[r], + send_counts[r]) goes to rank r, which gets it at its
  /// [recv_displs[me], + recv_counts[me]). Counts and displacements are in bytes, one per rank;
  /// a rank's block to itself must be as long as the one it expects from itself. Fallback:
  /// size() - 1 paired exchanges, rank + s to rank - s at step s.
  virtual void all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                                  std::span<const std::size_t> send_displs, void* recv,
                                  std::span<const std::size_t> recv_counts,
                                  std::span<const std::size_t> recv_displs, cudaStream_t stream = nullptr);
  /// Rank `root`'s `bytes` at `data` to every rank's `data`. Fallback: a binomial tree,
  /// ceil(log2 size()) rounds.
  virtual void broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream = nullptr);
  /// Returns once every rank has entered it. Fallback: an all_gather of one byte.
  virtual void barrier();

  // ---- The same calls on host buffers (host_memory_t): no pointer query ----

  void all_gather_bytes(host_memory_t, const void* send, void* recv, std::size_t bytes) {
    const host_call call(*this);
    all_gather_bytes(send, recv, bytes);
  }
  void all_reduce(host_memory_t, const void* send, void* recv, std::size_t count, data_type type, reduce_op op) {
    const host_call call(*this);
    all_reduce(send, recv, count, type, op);
  }
  void all_to_all_v_bytes(host_memory_t, const void* send, std::span<const std::size_t> send_counts,
                          std::span<const std::size_t> send_displs, void* recv,
                          std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs) {
    const host_call call(*this);
    all_to_all_v_bytes(send, send_counts, send_displs, recv, recv_counts, recv_displs);
  }
  void broadcast_bytes(host_memory_t, void* data, std::size_t bytes, int root) {
    const host_call call(*this);
    broadcast_bytes(data, bytes, root);
  }

  // ---- Typed conveniences ----

  void send_bytes(const void* data, std::size_t bytes, int peer, cudaStream_t stream = nullptr) {
    check_peer("send", peer);
    send_recv_bytes(data, bytes, peer, nullptr, 0, -1, stream);
  }
  void recv_bytes(void* data, std::size_t bytes, int peer, cudaStream_t stream = nullptr) {
    check_peer("recv", peer);
    send_recv_bytes(nullptr, 0, -1, data, bytes, peer, stream);
  }
  template <class T>
  void send(const T* data, std::size_t count, int peer, cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    send_bytes(data, count * sizeof(T), peer, stream);
  }
  template <class T>
  void recv(T* data, std::size_t count, int peer, cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    recv_bytes(data, count * sizeof(T), peer, stream);
  }
  template <class T>
  void send_recv(const T* send, std::size_t send_count, int send_to, T* recv, std::size_t recv_count,
                 int recv_from, cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    send_recv_bytes(send, send_count * sizeof(T), send_to, recv, recv_count * sizeof(T), recv_from, stream);
  }

  /// Every rank's `value`, in rank order.
  template <class T>
  std::vector<T> all_gather(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> all(static_cast<std::size_t>(size()));
    all_gather_bytes(host_memory, &value, all.data(), sizeof(T));
    return all;
  }
  template <class T>
  void all_gather(host_memory_t, const T* send, T* recv, std::size_t count) {
    static_assert(std::is_trivially_copyable_v<T>);
    all_gather_bytes(host_memory, send, recv, count * sizeof(T));
  }
  /// `count` elements from every rank into recv (size() * count elements).
  template <class T>
  void all_gather(const T* send, T* recv, std::size_t count, cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    all_gather_bytes(send, recv, count * sizeof(T), stream);
  }
  template <detail::reducible_type T>
  void all_reduce(const T* send, T* recv, std::size_t count, reduce_op op, cudaStream_t stream = nullptr) {
    all_reduce(send, recv, count, detail::data_type_of<T>(), op, stream);
  }
  template <detail::reducible_type T>
  void all_reduce(host_memory_t, const T* send, T* recv, std::size_t count, reduce_op op) {
    all_reduce(host_memory, send, recv, count, detail::data_type_of<T>(), op);
  }
  template <detail::reducible_type T>
  T all_reduce(T value, reduce_op op) {
    T result{};
    all_reduce(host_memory, &value, &result, 1, detail::data_type_of<T>(), op);
    return result;
  }
  /// Rank root's `count` elements at `data` to every rank's `data`.
  template <class T>
  void broadcast(T* data, std::size_t count, int root, cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    broadcast_bytes(data, count * sizeof(T), root, stream);
  }
  template <class T>
  void broadcast(host_memory_t, T* data, std::size_t count, int root) {
    static_assert(std::is_trivially_copyable_v<T>);
    broadcast_bytes(host_memory, data, count * sizeof(T), root);
  }
  /// Element counts and displacements (one per rank), as MPI_Alltoallv.
  template <class T>
  void all_to_all_v(const T* send, std::span<const std::size_t> send_counts, std::span<const std::size_t> send_displs,
                    T* recv, std::span<const std::size_t> recv_counts, std::span<const std::size_t> recv_displs,
                    cudaStream_t stream = nullptr) {
    static_assert(std::is_trivially_copyable_v<T>);
    auto bytes = [](std::span<const std::size_t> elements) {
      std::vector<std::size_t> b(elements.size());
      for (std::size_t i = 0; i < elements.size(); ++i) b[i] = elements[i] * sizeof(T);
      return b;
    };
    auto sc = bytes(send_counts), sd = bytes(send_displs), rc = bytes(recv_counts), rd = bytes(recv_displs);
    all_to_all_v_bytes(send, sc, sd, recv, rc, rd, stream);
  }
  template <class T>
  void all_to_all_v(host_memory_t, const T* send, std::span<const std::size_t> send_counts,
                    std::span<const std::size_t> send_displs, T* recv, std::span<const std::size_t> recv_counts,
                    std::span<const std::size_t> recv_displs) {
    const host_call call(*this);
    all_to_all_v(send, send_counts, send_displs, recv, recv_counts, recv_displs);
  }

 protected:
  /// True inside a call made with host_memory: every buffer of the call is host memory, and
  /// the engine need not ask the driver.
  bool host_buffers() const noexcept { return host_buffers_; }
  void check_peer(const char* call, int peer) const;
  /// The fallbacks' helpers: wait for the work enqueued on `stream` (none for nullptr), and
  /// copy within this rank (host or device buffers, a device copy on `stream`, waited for; no
  /// pointer query in a host_memory call).
  void wait_for_stream(cudaStream_t stream) const;
  void copy_local(void* dst, const void* src, std::size_t bytes, cudaStream_t stream = nullptr) const;
  /// The steady clock's time timeout() from now; its maximum when waiting for ever (or when
  /// the timeout is too long for the clock).
  std::chrono::steady_clock::time_point deadline() const noexcept;

 private:
  /// Marks the calls it spans as host_memory ones (a nested call keeps the outer mark).
  class host_call {
   public:
    explicit host_call(communicator& c) noexcept : comm_(c), outer_(c.host_buffers_) { c.host_buffers_ = true; }
    ~host_call() { comm_.host_buffers_ = outer_; }
    host_call(const host_call&) = delete;
    host_call& operator=(const host_call&) = delete;

   private:
    communicator& comm_;
    bool outer_;
  };
  bool host_buffers_ = false;
  std::chrono::duration<double> timeout_ = default_timeout();
  static std::chrono::duration<double> default_timeout();
};

}  // namespace multigpu
