#include <multigpu/comm/nccl_communicator.hpp>

#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/error.hpp>

#include "call_watchdog.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace multigpu {
namespace {

// The NCCL entry points the communicator uses, from dlopen (see the header).
struct nccl_api {
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) init_rank_config;
  decltype(&ncclCommFinalize) finalize;
  decltype(&ncclCommDestroy) destroy;
  decltype(&ncclCommAbort) abort;
  decltype(&ncclCommGetAsyncError) get_async_error;
  decltype(&ncclCommCount) count;
  decltype(&ncclCommUserRank) user_rank;
  decltype(&ncclCommCuDevice) cu_device;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclGetLastError) last_error;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
};

template <class F>
void bind(void* library, F& f, const char* name, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(library, name));
  if (f == nullptr) missing += detail::concat(missing.empty() ? "" : ", ", name);
}

const nccl_api& nccl() {
  static std::mutex mutex;
  static nccl_api api{};
  static bool loaded = false;
  std::lock_guard lock(mutex);
  if (loaded) return api;
  std::vector<const char*> candidates;
  if (const char* chosen = std::getenv("MULTIGPU_NCCL_LIBRARY")) candidates.push_back(chosen);
  else candidates = {"libnccl.so.2", "libnccl.so"};
  std::string tried;
  void* library = nullptr;
  for (const char* name : candidates) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library != nullptr) break;
    const char* why = dlerror();
    tried += detail::concat(tried.empty() ? "" : "; ", why != nullptr ? why : name);
  }
  if (library == nullptr)
    throw comm_error(detail::concat("multigpu: NCCL is not available at run time (", tried,
                                    "); install NCCL (libnccl2) or set MULTIGPU_NCCL_LIBRARY to libnccl.so.2"));
  std::string missing;
  bind(library, api.get_version, "ncclGetVersion", missing);
  bind(library, api.get_unique_id, "ncclGetUniqueId", missing);
  bind(library, api.init_rank_config, "ncclCommInitRankConfig", missing);
  bind(library, api.finalize, "ncclCommFinalize", missing);
  bind(library, api.destroy, "ncclCommDestroy", missing);
  bind(library, api.abort, "ncclCommAbort", missing);
  bind(library, api.get_async_error, "ncclCommGetAsyncError", missing);
  bind(library, api.count, "ncclCommCount", missing);
  bind(library, api.user_rank, "ncclCommUserRank", missing);
  bind(library, api.cu_device, "ncclCommCuDevice", missing);
  bind(library, api.error_string, "ncclGetErrorString", missing);
  bind(library, api.last_error, "ncclGetLastError", missing);
  bind(library, api.all_reduce, "ncclAllReduce", missing);
  bind(library, api.all_gather, "ncclAllGather", missing);
  bind(library, api.broadcast, "ncclBroadcast", missing);
  bind(library, api.send, "ncclSend", missing);
  bind(library, api.recv, "ncclRecv", missing);
  bind(library, api.group_start, "ncclGroupStart", missing);
  bind(library, api.group_end, "ncclGroupEnd", missing);
  if (!missing.empty()) {
    dlclose(library);
    throw comm_error(detail::concat("multigpu: the NCCL library found lacks ", missing,
                                    " (older than 2.14?); install NCCL 2.14 or newer"));
  }
  loaded = true;
  return api;
}

std::string describe(ncclResult_t result) {
  const nccl_api& api = nccl();
  std::string text = api.error_string(result);
  if (const char* last = api.last_error(nullptr); last != nullptr && *last != '\0') text += detail::concat(": ", last);
  return text;
}

void check_static(ncclResult_t result, const char* call) {
  if (result != ncclSuccess) throw comm_error(detail::concat("multigpu: ", call, " failed: ", describe(result)));
}

ncclDataType_t nccl_type(data_type type) {
  switch (type) {
    case data_type::int8: return ncclInt8;
    case data_type::uint8: return ncclUint8;
    case data_type::int32: return ncclInt32;
    case data_type::uint32: return ncclUint32;
    case data_type::int64: return ncclInt64;
    case data_type::uint64: return ncclUint64;
    case data_type::float32: return ncclFloat32;
    case data_type::float64: return ncclFloat64;
  }
  return ncclInt8;
}

ncclRedOp_t nccl_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::prod: return ncclProd;
    case reduce_op::min: return ncclMin;
    case reduce_op::max: return ncclMax;
  }
  return ncclSum;
}

}  // namespace

bool nccl_runtime_available() noexcept {
  try {
    nccl();
    return true;
  } catch (...) {
    return false;
  }
}

int nccl_runtime_version() noexcept {
  try {
    int version = 0;
    return nccl().get_version(&version) == ncclSuccess ? version : 0;
  } catch (...) {
    return 0;
  }
}

/// Host buffers of one call staged through the communicator's device scratch space.
class nccl_communicator::staged {
 public:
  staged(nccl_communicator& comm, cudaStream_t stream) : comm_(comm), stream_(stream) {}
  const void* in(const void* p, std::size_t bytes) {
    if (bytes == 0 || on_device(p)) return p;
    void* d = comm_.scratch(0, bytes);
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, stream_));
    return d;
  }
  void* out(void* p, std::size_t bytes, bool preload = false) {
    if (bytes == 0 || on_device(p)) return p;
    void* d = comm_.scratch(1, bytes);
    if (preload) MULTIGPU_CUDA_TRY(cudaMemcpyAsync(d, p, bytes, cudaMemcpyHostToDevice, stream_));
    out_ = p;
    out_bytes_ = bytes;
    return d;
  }
  /// After the operation completed (wait): the result goes to the caller's host buffer.
  /// Copying only then keeps a dead peer from blocking the host in a pageable copy.
  void finish() {
    if (out_ == nullptr) return;
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(out_, comm_.scratch_[1], out_bytes_, cudaMemcpyDeviceToHost, stream_));
    MULTIGPU_CUDA_TRY(cudaStreamSynchronize(stream_));
  }

 private:
  bool on_device(const void* p) const { return !comm_.host_buffers() && detail::is_device_pointer(p); }
  nccl_communicator& comm_;
  cudaStream_t stream_;
  void* out_ = nullptr;
  std::size_t out_bytes_ = 0;
};

/// The NCCL communicator's watchdog (call_watchdog): at every look during a wait it asks
/// ncclCommGetAsyncError, and aborts the NCCL communicator when NCCL reports an error or the
/// wait is past its limit; the waiting call then finds the verdict and throws. NCCL's abort
/// waits for work queued before the call on the same stream, so it runs on a thread of its own;
/// a wait still not over one timeout after the abort began (other work holds the stream, which
/// an abort cannot end) ends the process with a message, as the MPI communicator's watchdog does.
class nccl_communicator::watchdog {
 public:
  watchdog(ncclComm_t comm, int rank, int size)
      : comm_(comm), rank_(rank), size_(size),
        dog_([this](const char*, clock::duration waited, clock::duration limit) { return act(waited, limit); },
             [this](const char* call, clock::duration) { last_words(call); }) {}

  /// A wait for `call` starts now.
  void begin(const char* call, double timeout_s) { dog_.begin(call, timeout_s); }
  /// The wait ended. Returns why the communicator was aborted during it, or "" (it was not).
  std::string end() {
    dog_.end();  // no look touches this wait from here on
    return std::exchange(verdict_, std::string());
  }

 private:
  using clock = detail::call_watchdog::clock;
  /// On the watchdog's thread, during a wait: true once it aborted the communicator.
  bool act(clock::duration waited, clock::duration limit) {
    const nccl_api& api = nccl();
    if (aborted_) return false;  // the handle is gone
    ncclResult_t async = ncclSuccess;
    const ncclResult_t asked = api.get_async_error(comm_, &async);
    if (asked != ncclSuccess) async = asked;
    const bool late = waited > limit;
    if ((async == ncclSuccess || async == ncclInProgress) && !late) return false;
    verdict_ = late ? detail::concat("made no progress within ", std::chrono::duration<double>(limit).count(),
                                     " s (a peer failed or skipped the call; MULTIGPU_COMM_TIMEOUT_S sets the limit)")
                    : detail::concat("failed: ", describe(async));
    aborted_ = true;
    // The abort ends NCCL's kernels (after the stream's earlier work), so the wait returns. It
    // may block as long as that work does: it runs on a thread of its own, so that the
    // watchdog can still end the process one timeout from now.
    const ncclComm_t comm = comm_;
    try {
      std::thread([comm] { nccl().abort(comm); }).detach();
    } catch (const std::system_error&) {
      api.abort(comm);  // no thread to spare: abort from here
    }
    return true;
  }
  /// The wait is still in flight one timeout after the abort.
  void last_words(const char* call) const {
    std::fprintf(stderr,
                 "multigpu: NCCL %s on rank %d of %d is still waiting one timeout after the NCCL communicator "
                 "was aborted (other work holds its stream). Ending the process.\n",
                 call, rank_, size_);
    std::fflush(stderr);
  }

  ncclComm_t comm_;
  int rank_, size_;
  std::string verdict_;  // written by act, read by end() after the wait
  bool aborted_ = false;
  detail::call_watchdog dog_;  // last: its thread starts once the members above exist
};

ncclUniqueId nccl_communicator::make_unique_id() {
  ncclUniqueId id;
  check_static(nccl().get_unique_id(&id), "ncclGetUniqueId");
  return id;
}

nccl_communicator::nccl_communicator(communicator& bootstrap, int device) {
  // Rank 0's id reaches every rank through an all_gather (every rank sends one, only rank
  // 0's is used): the bootstrap needs no broadcast of its own.
  ncclUniqueId mine{};
  std::string failure;
  if (bootstrap.rank() == 0) {
    try {
      mine = make_unique_id();
    } catch (const comm_error& e) {
      failure = e.what();
    }
  }
  std::vector<ncclUniqueId> ids = bootstrap.all_gather(mine);
  // A rank-0 failure (NCCL missing there) must not leave the others waiting in init.
  const int ok = bootstrap.all_reduce(failure.empty() ? 1 : 0, reduce_op::min);
  if (!failure.empty()) throw comm_error(failure);
  if (ok == 0) throw comm_error("multigpu: nccl_communicator: rank 0 could not create the NCCL unique id");
  init(ids[0], bootstrap.rank(), bootstrap.size(), device);
}

nccl_communicator::nccl_communicator(const ncclUniqueId& id, int rank, int size, int device) {
  init(id, rank, size, device);
}

nccl_communicator::nccl_communicator(ncclComm_t comm) {
  MULTIGPU_EXPECTS(comm != nullptr, "nccl_communicator: the ncclComm_t is null");
  const nccl_api& api = nccl();
  comm_ = comm;
  check_static(api.count(comm_, &size_), "ncclCommCount");
  check_static(api.user_rank(comm_, &rank_), "ncclCommUserRank");
  check_static(api.cu_device(comm_, &device_), "ncclCommCuDevice");
  device_guard guard(device_);
  create_stream_and_event();
}

void nccl_communicator::create_stream_and_event() {
  MULTIGPU_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (const cudaError_t made = cudaEventCreateWithFlags(&done_, cudaEventDisableTiming); made != cudaSuccess) {
    MULTIGPU_CUDA_REPORT(cudaStreamDestroy(stream_));  // no destructor runs for a constructor that throws
    stream_ = nullptr;
    MULTIGPU_CUDA_TRY(made);
  }
}

void nccl_communicator::init(const ncclUniqueId& id, int rank, int size, int device) {
  MULTIGPU_EXPECTS(size >= 1 && rank >= 0 && rank < size,
                   detail::concat("nccl_communicator: rank ", rank, " is not in [0, ", size, ")"));
  const nccl_api& api = nccl();
  int devices = 0;
  MULTIGPU_CUDA_TRY(cudaGetDeviceCount(&devices));
  MULTIGPU_EXPECTS(device >= 0 && device < devices,
                   detail::concat("nccl_communicator: device ", device, " is not one of the ", devices, " visible"));
  rank_ = rank;
  size_ = size;
  device_ = device;
  device_guard guard(device_);
  const std::string joining = detail::concat("ncclCommInitRankConfig (rank ", rank, " of ", size, " on device ", device, ")");
  create_stream_and_event();
  // Non-blocking: the call returns at once, and a rank that never joins is a timeout, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t result = api.init_rank_config(&comm_, size, id, rank, &config);
  owned_ = comm_ != nullptr;
  try {
    if (result == ncclInProgress) result = settle(joining.c_str());  // throws after aborting on timeout
    if (result != ncclSuccess) {
      if (comm_ != nullptr) api.abort(comm_);
      comm_ = nullptr;
      owned_ = false;
      throw comm_error(detail::concat("multigpu: ", joining, " failed: ", describe(result)));
    }
  } catch (...) {  // no destructor runs for a constructor that throws
    MULTIGPU_CUDA_REPORT(cudaEventDestroy(done_));
    MULTIGPU_CUDA_REPORT(cudaStreamDestroy(stream_));
    throw;
  }
}

ncclResult_t nccl_communicator::settle(const char* call) {
  using clock = std::chrono::steady_clock;
  const nccl_api& api = nccl();
  const auto until = deadline();
  for (long polls = 0;; ++polls) {
    ncclResult_t state = ncclInProgress;
    const ncclResult_t asked = api.get_async_error(comm_, &state);
    if (asked != ncclSuccess) return asked;
    if (state != ncclInProgress) return state;
    if (clock::now() > until) {
      api.abort(comm_);
      comm_ = nullptr;  // aborted: nothing left to destroy or use
      owned_ = false;
      throw comm_error(detail::concat("multigpu: NCCL ", call, " on rank ", rank_, " of ", size_,
                                      " did not finish within ", timeout().count(),
                                      " s (a peer failed or did not join; MULTIGPU_COMM_TIMEOUT_S sets the limit); "
                                      "the communicator was aborted"));
    }
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(polls > 10000 ? 1000 : 10));
  }
}

nccl_communicator::~nccl_communicator() {
  watchdog_.reset();  // before the communicator it watches goes
  device_guard guard(device_);
  if (owned_ && comm_ != nullptr) {
    // Finalize (non-blocking: settled by polling), then free; a finalize that does not settle
    // within timeout() is aborted instead.
    const nccl_api& api = nccl();
    ncclResult_t result = api.finalize(comm_);
    if (result == ncclInProgress) {
      try {
        result = settle("ncclCommFinalize");
      } catch (const comm_error& e) {
        std::fprintf(stderr, "%s\n", e.what());
      }
    }
    if (comm_ != nullptr) {
      if (result == ncclSuccess) result = api.destroy(comm_);
      else api.abort(comm_);
      if (result != ncclSuccess)
        std::fprintf(stderr, "multigpu: freeing the NCCL communicator failed: %s\n", api.error_string(result));
    }
  }
  if (done_ != nullptr) MULTIGPU_CUDA_REPORT(cudaEventDestroy(done_));
  for (void* p : scratch_)
    if (p != nullptr) MULTIGPU_CUDA_REPORT(cudaFree(p));
  if (stream_ != nullptr) MULTIGPU_CUDA_REPORT(cudaStreamDestroy(stream_));
}

void* nccl_communicator::scratch(int which, std::size_t bytes) {
  if (scratch_bytes_[which] < bytes) {
    // The old buffer may still be read by work on a stream: wait before freeing it.
    if (scratch_[which] != nullptr) {
      MULTIGPU_CUDA_TRY(cudaDeviceSynchronize());
      MULTIGPU_CUDA_TRY(cudaFree(scratch_[which]));
      scratch_[which] = nullptr;
      scratch_bytes_[which] = 0;
    }
    MULTIGPU_CUDA_TRY(cudaMalloc(&scratch_[which], bytes));
    scratch_bytes_[which] = bytes;
  }
  return scratch_[which];
}

void nccl_communicator::check(ncclResult_t result, const char* call) {
  if (result == ncclInProgress) result = settle(call);  // a non-blocking communicator still enqueueing
  if (result == ncclSuccess) return;
  std::string text = describe(result);
  throw comm_error(detail::concat("multigpu: ", call, " on NCCL rank ", rank_, " of ", size_, " failed: ", text));
}

void nccl_communicator::wait(cudaStream_t stream, const char* call) {
  MULTIGPU_CUDA_TRY(cudaEventRecord(done_, stream));
  std::string verdict;
  cudaError_t waited = cudaSuccess;
  if (waits_forever()) {
    waited = cudaEventSynchronize(done_);
  } else {
    if (!watchdog_) watchdog_ = std::make_unique<watchdog>(comm_, rank_, size_);
    watchdog_->begin(call, timeout().count());
    waited = cudaEventSynchronize(done_);  // CUDA's wait: no polling loop, no NCCL query
    verdict = watchdog_->end();
  }
  if (!verdict.empty()) {
    comm_ = nullptr;  // aborted by the watchdog: nothing left to destroy or use
    owned_ = false;
    throw comm_error(detail::concat("multigpu: NCCL ", call, " on rank ", rank_, " of ", size_, " ", verdict,
                                    "; the communicator was aborted"));
  }
  MULTIGPU_CUDA_TRY(waited);
  // An error NCCL noted without stalling the stream.
  ncclResult_t async = ncclSuccess;
  check(nccl().get_async_error(comm_, &async), "ncclCommGetAsyncError");
  if (async != ncclSuccess && async != ncclInProgress) {
    nccl().abort(comm_);
    comm_ = nullptr;
    owned_ = false;
    throw comm_error(detail::concat("multigpu: NCCL ", call, " on rank ", rank_, " of ", size_,
                                    " failed: ", describe(async), "; the communicator was aborted"));
  }
}

void nccl_communicator::all_gather_bytes(const void* send, void* recv, std::size_t bytes, cudaStream_t stream) {
  MULTIGPU_EXPECTS(comm_ != nullptr, "nccl_communicator: used after an abort");
  device_guard guard(device_);
  cudaStream_t s = pick(stream);
  if (stream == nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(nullptr));  // host-side callers' data is ready
  staged buffers(*this, s);
  const void* in = buffers.in(send, bytes);
  void* out = buffers.out(recv, bytes * static_cast<std::size_t>(size_));
  check(nccl().all_gather(in, out, bytes, ncclInt8, comm_, s), "ncclAllGather");
  wait(s, "all_gather");
  buffers.finish();
}

void nccl_communicator::all_reduce(const void* send, void* recv, std::size_t count, data_type type, reduce_op op,
                                   cudaStream_t stream) {
  MULTIGPU_EXPECTS(comm_ != nullptr, "nccl_communicator: used after an abort");
  device_guard guard(device_);
  cudaStream_t s = pick(stream);
  if (stream == nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(nullptr));
  const std::size_t bytes = count * size_of(type);
  staged buffers(*this, s);
  const bool in_place = send == recv;
  void* out = buffers.out(recv, bytes, in_place);
  const void* in = in_place ? out : buffers.in(send, bytes);
  check(nccl().all_reduce(in, out, count, nccl_type(type), nccl_op(op), comm_, s), "ncclAllReduce");
  wait(s, "all_reduce");
  buffers.finish();
}

void nccl_communicator::send_recv_bytes(const void* send, std::size_t send_bytes, int send_to, void* recv,
                                        std::size_t recv_bytes, int recv_from, cudaStream_t stream) {
  MULTIGPU_EXPECTS(comm_ != nullptr, "nccl_communicator: used after an abort");
  if (send_to != -1) check_peer("send_recv", send_to);
  if (recv_from != -1) check_peer("send_recv", recv_from);
  device_guard guard(device_);
  cudaStream_t s = pick(stream);
  if (stream == nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(nullptr));
  if (send_to == rank_ && recv_from == rank_) {  // to itself: a copy, no NCCL
    MULTIGPU_EXPECTS(send_bytes == recv_bytes, detail::concat("send_recv: rank ", rank_, " sends ", send_bytes,
                                                              " bytes to itself but receives ", recv_bytes));
    if (send_bytes > 0) MULTIGPU_CUDA_TRY(cudaMemcpyAsync(recv, send, send_bytes, cudaMemcpyDefault, s));
    wait(s, "send_recv");
    return;
  }
  staged buffers(*this, s);
  const void* in = send_to == -1 ? nullptr : buffers.in(send, send_bytes);
  void* out = recv_from == -1 ? nullptr : buffers.out(recv, recv_bytes);
  const nccl_api& api = nccl();
  check(api.group_start(), "ncclGroupStart");
  ncclResult_t sent = send_to == -1 ? ncclSuccess : api.send(in, send_bytes, ncclInt8, send_to, comm_, s);
  ncclResult_t received = recv_from == -1 ? ncclSuccess : api.recv(out, recv_bytes, ncclInt8, recv_from, comm_, s);
  check(api.group_end(), "ncclGroupEnd");
  check(sent, "ncclSend");
  check(received, "ncclRecv");
  wait(s, "send_recv");
  buffers.finish();
}

void nccl_communicator::all_to_all_v_bytes(const void* send, std::span<const std::size_t> send_counts,
                                           std::span<const std::size_t> send_displs, void* recv,
                                           std::span<const std::size_t> recv_counts,
                                           std::span<const std::size_t> recv_displs, cudaStream_t stream) {
  MULTIGPU_EXPECTS(comm_ != nullptr, "nccl_communicator: used after an abort");
  detail::expect_per_rank("all_to_all_v", send_counts.size(), size_);
  detail::expect_per_rank("all_to_all_v", send_displs.size(), size_);
  detail::expect_per_rank("all_to_all_v", recv_counts.size(), size_);
  detail::expect_per_rank("all_to_all_v", recv_displs.size(), size_);
  std::size_t send_extent = 0, recv_extent = 0;
  for (int r = 0; r < size_; ++r) {
    if (send_counts[r]) send_extent = std::max(send_extent, send_displs[r] + send_counts[r]);
    if (recv_counts[r]) recv_extent = std::max(recv_extent, recv_displs[r] + recv_counts[r]);
  }
  MULTIGPU_EXPECTS(send_counts[rank_] == recv_counts[rank_],
                   detail::concat("all_to_all_v: rank ", rank_, " sends ", send_counts[rank_],
                                  " bytes to itself but expects ", recv_counts[rank_]));
  device_guard guard(device_);
  cudaStream_t s = pick(stream);
  if (stream == nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(nullptr));
  staged buffers(*this, s);
  const auto* in = static_cast<const std::byte*>(buffers.in(send, send_extent));
  // Bytes between the blocks keep their values (none when the blocks cover the extent).
  auto* out = static_cast<std::byte*>(buffers.out(recv, recv_extent, !detail::blocks_cover(recv_counts, recv_displs, recv_extent)));
  const nccl_api& api = nccl();
  if (send_counts[rank_] > 0)
    MULTIGPU_CUDA_TRY(cudaMemcpyAsync(out + recv_displs[rank_], in + send_displs[rank_], send_counts[rank_],
                                      cudaMemcpyDeviceToDevice, s));
  check(api.group_start(), "ncclGroupStart");
  ncclResult_t first_error = ncclSuccess;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    ncclResult_t a = send_counts[r] ? api.send(in + send_displs[r], send_counts[r], ncclInt8, r, comm_, s) : ncclSuccess;
    ncclResult_t b = recv_counts[r] ? api.recv(out + recv_displs[r], recv_counts[r], ncclInt8, r, comm_, s) : ncclSuccess;
    if (first_error == ncclSuccess) first_error = a != ncclSuccess ? a : b;
  }
  check(api.group_end(), "ncclGroupEnd");
  check(first_error, "ncclSend/ncclRecv");
  wait(s, "all_to_all_v");
  buffers.finish();
}

void nccl_communicator::broadcast_bytes(void* data, std::size_t bytes, int root, cudaStream_t stream) {
  MULTIGPU_EXPECTS(comm_ != nullptr, "nccl_communicator: used after an abort");
  check_peer("broadcast", root);
  device_guard guard(device_);
  cudaStream_t s = pick(stream);
  if (stream == nullptr) MULTIGPU_CUDA_TRY(cudaStreamSynchronize(nullptr));
  staged buffers(*this, s);
  void* d = buffers.out(data, bytes, rank_ == root);  // the root's bytes go in, everyone's come out
  check(nccl().broadcast(d, d, bytes, ncclInt8, root, comm_, s), "ncclBroadcast");
  wait(s, "broadcast");
  buffers.finish();
}

void nccl_communicator::barrier() {
  // An all_reduce of one value: returns once every rank has entered it.
  int token = 1;
  all_reduce(host_memory, &token, &token, 1, data_type::int32, reduce_op::min);
}

}  // namespace multigpu
