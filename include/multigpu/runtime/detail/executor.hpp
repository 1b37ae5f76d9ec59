#pragma once
// How a call is executed: chosen once, when the group is built (group_options::dispatch), and
// decided here alone. An algorithm hands the executor its plan, the pieces and a step per
// piece (for_each) or a whole collective (collective); it never asks which policy is in force.
// The executor is the algorithms' one way into a group: it draws on the group's resources
// (runtime/detail/group_resources.hpp) and hands each step a piece_context with the device,
// stream, pool and scratch of its slot.
//
// | policy          | for_each                          | collective                          |
// |-----------------|-----------------------------------|-------------------------------------|
// | caller_thread   | the calling thread, piece by piece | enqueued on the slots' streams     |
// | worker_threads  | each slot's worker thread at once  | enqueued on the slots' streams     |
// | graph           | the calling thread, piece by piece | captured into a CUDA graph once,   |
// |                 |                                    | replayed (runtime/graph_replay.cpp) |
//
// The streams a collective's work goes to are handed to it (slot_streams): the slots' own
// streams, or while it is being captured, the graph's capture streams. Nothing redirects a
// stream behind a step's back.
//
// Implementations: src/runtime/executor.cpp.

#include <multigpu/core/function_ref.hpp>
#include <multigpu/core/piece.hpp>
#include <multigpu/runtime/topology.hpp>

#include <cuda_runtime_api.h>

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace multigpu {
enum class dispatch_policy;
class device_pool;
class event_pool;
class staging_pool;
}

namespace multigpu::detail {

class collective_sync;
class group_resources;
class group_scratch;
class graph_replay;
class slot_scratch;

/// The stream of every slot for one call's work, as the executor hands it out.
class slot_streams {
 public:
  slot_streams(const cudaStream_t* streams, bool capturing) noexcept : streams_(streams), capturing_(capturing) {}
  cudaStream_t operator[](std::size_t slot) const noexcept { return streams_[slot]; }
  /// True while the work is captured into a graph rather than run.
  bool capturing() const noexcept { return capturing_; }

 private:
  const cudaStream_t* streams_;
  bool capturing_;
};

/// What a per-piece step gets: the piece's index, slot, device, stream, pool, element count and
/// the slot's persistent scratch (runtime/detail/scratch.hpp). The piece's device is current
/// while the step runs.
struct piece_context {
  std::size_t index;
  std::size_t slot;
  int device;
  cudaStream_t stream;
  device_pool* pool;
  std::size_t count;
  slot_scratch* scratch;
};
static_assert(std::is_trivially_copyable_v<piece_context>);

template <class X>
inline constexpr bool is_optional = false;
template <class X>
inline constexpr bool is_optional<std::optional<X>> = true;

/// What a collective that may be replayed depends on, as bytes: the call site, the pieces,
/// the device pointers and the values (init, operators) that end up in its kernels'
/// parameters. Two calls with equal fingerprints enqueue the same work. A value that cannot be
/// compared as bytes (not trivially copyable) or too many of them make the fingerprint
/// invalid: such calls run eagerly, never replayed blindly.
class call_fingerprint {
 public:
  template <class X>
  void add(const X& x) noexcept {
    if constexpr (is_optional<X>) {
      // A value a call may go without (an optional init): whether it is there, then its bytes
      // (an empty optional's storage is indeterminate).
      add(x.has_value());
      if (x.has_value()) add(*x);
    } else if constexpr (std::is_empty_v<X>) {
      return;  // an empty operator's one byte says nothing
    } else if constexpr (!std::is_trivially_copyable_v<X> || sizeof(X) > capacity) {
      valid_ = false;  // (a value larger than the whole fingerprint is known not to fit here)
    } else {
      if (size_ + sizeof(X) > capacity) {
        valid_ = false;
        return;
      }
      std::memcpy(bytes_ + size_, &x, sizeof(X));
      size_ += sizeof(X);
    }
  }
  template <class... X>
  void add_all(const X&... x) noexcept {
    (add(x), ...);
  }
  bool valid() const noexcept { return valid_; }
  friend bool operator==(const call_fingerprint& a, const call_fingerprint& b) noexcept {
    return a.valid_ && b.valid_ && a.size_ == b.size_ && std::memcmp(a.bytes_, b.bytes_, a.size_) == 0;
  }

 private:
  static constexpr std::size_t capacity = 1024;
  std::size_t size_ = 0;
  bool valid_ = true;
  unsigned char bytes_[capacity];
};

/// The last kernel of a reduction, whose output address changes per call: a replay rewrites
/// its parameters (cudaGraphExecKernelNodeSetParams) before launching. A view of a
/// kernel_launch.
struct result_kernel {
  void* function = nullptr;
  void** arguments = nullptr;
};

/// A kernel with one call's arguments, held by value, launched the way cudaLaunchKernel takes
/// it: the collective launches it, and graph replay patches the captured node with node()
/// instead. `Params` are the kernel's parameter types, so each argument's address is that of
/// a parameter. Not copyable: node() points into it.
template <class... Params>
class kernel_launch {
 public:
  template <class... Args>
  explicit kernel_launch(void (*kernel)(Params...), Args&&... args)
      : kernel_(kernel), arguments_(std::forward<Args>(args)...) {
    std::size_t i = 0;
    std::apply([&](Params&... a) { ((addresses_[i++] = static_cast<void*>(&a)), ...); }, arguments_);
  }
  kernel_launch(const kernel_launch&) = delete;
  kernel_launch& operator=(const kernel_launch&) = delete;

  /// What a graph replay writes into the captured node.
  result_kernel node() noexcept { return {reinterpret_cast<void*>(kernel_), addresses_}; }
  /// Launches it on `stream`; the caller checks the status.
  cudaError_t operator()(dim3 grid, dim3 block, cudaStream_t stream) noexcept {
    return cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), grid, block, addresses_, 0, stream);
  }

 private:
  void (*kernel_)(Params...);
  std::tuple<Params...> arguments_;
  void* addresses_[sizeof...(Params) > 0 ? sizeof...(Params) : 1];
};
template <class... Params, class... Args>
kernel_launch(void (*)(Params...), Args&&...) -> kernel_launch<Params...>;

/// One collective as the executor receives it.
struct collective_plan {
  /// Identifies the call site and its types.
  const void* site = nullptr;
  /// The pieces; pieces[0]'s slot is the root.
  std::span<const piece> pieces;
  /// Null when the call cannot be replayed (then it always runs eagerly). Filled only when
  /// the executor replays().
  const call_fingerprint* fingerprint = nullptr;
  /// The kernel that ends the collective on the root, with this call's arguments, if any.
  const result_kernel* result = nullptr;
};

class executor {
 public:
  virtual ~executor() = default;
  executor(const executor&) = delete;
  executor& operator=(const executor&) = delete;

  /// Runs step(ctx) for every piece, each with its slot's device current and its work going to
  /// `streams`. Steps must not depend on each other's host-side effects. Nothing waits for the
  /// devices.
  void for_each(std::span<const piece> pieces, const slot_streams& streams,
                function_ref<void(const piece_context&)> step);

  /// Runs one collective: enqueue(streams) enqueues it on the streams given. The caller holds
  /// the group's scratch lock (runtime/detail/scratch.hpp).
  virtual void collective(const collective_plan& plan, function_ref<void(const slot_streams&)> enqueue) = 0;

  /// Whether collective() may capture and replay: only then is a fingerprint worth filling.
  virtual bool replays() const noexcept { return false; }

  /// The graphs of the graph executor (its counters), null for the others.
  virtual const graph_replay* graphs() const noexcept { return nullptr; }

  /// The slots' own streams: where every call that is not being captured enqueues.
  const slot_streams& streams() const noexcept { return own_; }

  // ---- What the algorithms draw on: the slots' devices and streams, staging, events,
  // scratch, merge routes and joins. The algorithms reach the group only through these, never
  // through its resources.
  /// Inline on the hot path; a slot out of range is a library bug, caught by the assertions of
  /// a debug build.
  int device(std::size_t slot) const noexcept {
    assert(slot < devices_.size());
    return devices_[slot];
  }
  /// The slot's own stream.
  cudaStream_t stream(std::size_t slot) const noexcept {
    assert(slot < devices_.size());
    return own_[slot];
  }
  staging_pool& staging() const noexcept;
  event_pool& events() const noexcept;
  group_scratch& scratch() const noexcept;
  /// The protocol that orders a collective's steps (runtime/detail/collective_sync.hpp).
  collective_sync& sync() const noexcept;
  merge_route merge(merge_kind kind) const noexcept;
  /// Slots that read `root`'s partials arena after an earlier call returned must be done
  /// before the arena changes: the root's stream waits for them.
  void join_readers(std::size_t root) const;
  /// Every one of `slots`' streams waits for the work enqueued so far on the others'.
  void join(std::span<const std::size_t> slots) const;

 protected:
  explicit executor(std::shared_ptr<group_resources> resources);
  /// The group's resources, for the executors themselves.
  group_resources& resources() const noexcept { return *resources_; }
  /// Runs run(i) for every piece, with the device of pieces[i].slot current.
  virtual void run_pieces(std::span<const piece> pieces, function_ref<void(std::size_t)> run);

 private:
  std::shared_ptr<group_resources> resources_;  // kept alive while the executor lives
  slot_streams own_;
  std::span<const int> devices_;  // each slot's device, owned by the resources
};

/// The executor of `policy` for the group whose resources are `resources`.
std::shared_ptr<executor> make_executor(dispatch_policy policy, std::shared_ptr<group_resources> resources);

}  // namespace multigpu::detail
