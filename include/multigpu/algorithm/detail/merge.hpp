#pragma once
// Per-device partial results and how they meet. Each piece of a range is reduced on its own
// device into a partial; the partials are then folded in segment order (operators must be
// associative, never assumed commutative). Partials meet either in pinned, mapped host
// memory that every device reads and writes in place (merge_route::host_mapped), or in an
// array in the first piece's device memory, written and read directly on one device or over
// peer links (merge_route::device). The group chooses (device_group::merge()).
//
// CUB's reductions take an initial value. The first piece gets the caller's init; the other
// pieces need an identity, which is known for common operators (0 for plus on arithmetic
// types, ...). For any other operator the partials are wrapped in `maybe<T>`, whose empty
// state is the identity of the wrapped operator.

#include <multigpu/algorithm/detail/cub_call.hpp>
#include <multigpu/algorithm/detail/ordered_reduce.hpp>
#include <multigpu/algorithm/detail/pieces.hpp>
#include <multigpu/algorithm/future.hpp>
#include <multigpu/runtime/detail/group_state.hpp>

#include <cub/device/device_reduce.cuh>
#include <cuda/functional>
#include <cuda/std/functional>
#include <cuda/std/limits>
#include <cuda/std/type_traits>

#include <cstdint>
#include <optional>
#include <vector>

namespace multigpu::detail {

// ---- identities -------------------------------------------------------------------------

/// identity_of<Op, T>::value exists when Op has a known identity element for T.
template <class Op, class T, class = void>
struct identity_of {
  static constexpr bool known = false;
};
template <class T, class Plus>
inline constexpr bool is_plus_v = std::is_same_v<Plus, cuda::std::plus<>> || std::is_same_v<Plus, cuda::std::plus<T>> ||
                                  std::is_same_v<Plus, std::plus<>> || std::is_same_v<Plus, std::plus<T>>;
template <class T, class Times>
inline constexpr bool is_multiplies_v =
    std::is_same_v<Times, cuda::std::multiplies<>> || std::is_same_v<Times, cuda::std::multiplies<T>> ||
    std::is_same_v<Times, std::multiplies<>> || std::is_same_v<Times, std::multiplies<T>>;
template <class T, class Min>
inline constexpr bool is_minimum_v = std::is_same_v<Min, cuda::minimum<>> || std::is_same_v<Min, cuda::minimum<T>>;
template <class T, class Max>
inline constexpr bool is_maximum_v = std::is_same_v<Max, cuda::maximum<>> || std::is_same_v<Max, cuda::maximum<T>>;

template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_plus_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() { return T(0); }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_multiplies_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() { return T(1); }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_minimum_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() {
    return cuda::std::numeric_limits<T>::has_infinity ? cuda::std::numeric_limits<T>::infinity()
                                                      : cuda::std::numeric_limits<T>::max();
  }
};
template <class Op, class T>
struct identity_of<Op, T, std::enable_if_t<std::is_arithmetic_v<T> && is_maximum_v<T, Op>>> {
  static constexpr bool known = true;
  static constexpr T value() {
    return cuda::std::numeric_limits<T>::has_infinity ? -cuda::std::numeric_limits<T>::infinity()
                                                      : cuda::std::numeric_limits<T>::lowest();
  }
};

/// Operators known to be commutative: the ones with a known identity above, and any
/// operator wrapped with multigpu::commutative().
template <class Op>
struct commutative_op;
template <class Op, class T>
struct is_commutative : std::bool_constant<identity_of<Op, T>::known> {};
template <class Op, class T>
struct is_commutative<commutative_op<Op>, T> : std::true_type {};

// ---- maybe<T>: an identity for any operator -----------------------------------------------

/// The flag of maybe<T> is as wide as T's alignment, so that value and flag fill the struct
/// with no padding: kernels copy maybe<T> as whole words, and padding bytes nobody wrote would
/// be reads of uninitialised memory (compute-sanitizer's initcheck reports them).
template <std::size_t Alignment>
struct maybe_flag {
  using type = bool;  // alignments above 16: the padding stays
};
template <>
struct maybe_flag<2> {
  using type = std::uint16_t;
};
template <>
struct maybe_flag<4> {
  using type = std::uint32_t;
};
template <>
struct maybe_flag<8> {
  using type = std::uint64_t;
};
template <>
struct maybe_flag<16> {
  using type = unsigned __int128;
};

template <class T>
struct maybe {
  using flag = typename maybe_flag<alignof(T)>::type;
  T value;
  flag has;
  maybe() = default;
  __host__ __device__ maybe(const T& v) : value(v), has(1) {}
  __host__ __device__ maybe(const T& v, bool h) : value(v), has(h ? 1 : 0) {}
};

/// Op lifted to maybe<T>: the empty maybe is its identity.
template <class T, class Op>
struct maybe_op {
  Op op;
  __host__ __device__ maybe<T> operator()(const maybe<T>& a, const maybe<T>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return maybe<T>(static_cast<T>(op(a.value, b.value)), true);
  }
};

template <class T>
__host__ __device__ const T& unwrap(const T& v) {
  return v;
}
template <class T>
__host__ __device__ const T& unwrap(const maybe<T>& v) {
  return v.value;
}

/// How partials of T under Op are represented: P is T itself when Op's identity is known,
/// maybe<T> otherwise; `op` combines two partials and `init(x)` / `empty()` make partials.
template <class T, class Op>
struct partial_traits {
  static constexpr bool direct = identity_of<Op, T>::known;
  static constexpr bool commutative = is_commutative<Op, T>::value;
  using partial = std::conditional_t<direct, T, maybe<T>>;
  using partial_op = std::conditional_t<direct, Op, maybe_op<T, Op>>;
  static partial_op lift(const Op& op) {
    if constexpr (direct)
      return op;
    else
      return maybe_op<T, Op>{op};
  }
  static partial wrap(const T& v) { return partial(v); }
  static partial empty() {
    if constexpr (direct)
      return identity_of<Op, T>::value();
    else
      return maybe<T>(T{}, false);
  }
};

/// Calls f with n as a 32-bit count when it fits and as a 64-bit count otherwise, as Thrust
/// does: 32-bit offsets make CUB's kernels faster.
template <class F>
cudaError_t with_count(std::size_t n, F&& f) {
  if (n <= static_cast<std::size_t>(INT32_MAX)) return f(static_cast<std::int32_t>(n));
  return f(static_cast<std::int64_t>(n));
}

/// *out = start op transform(in[0]) op ... op transform(in[n-1]) for one piece, on its stream:
/// CUB's reduction when the operator is commutative, the order-keeping kernel otherwise.
template <class Traits, class Input, class Transform, class POp, class P>
void reduce_one_piece(const piece_context& ctx, Input in, Transform transform, POp op, P start, P* out) {
  if constexpr (Traits::commutative) {
    if constexpr (std::is_same_v<Transform, identity_transform>) {
      cub_call(*ctx.pool, ctx.stream, "cub::DeviceReduce::Reduce", [&](void* temp, std::size_t& bytes) {
        return with_count(ctx.count, [&](auto n) {
          return cub::DeviceReduce::Reduce(temp, bytes, in, out, n, op, start, ctx.stream);
        });
      });
    } else {
      cub_call(*ctx.pool, ctx.stream, "cub::DeviceReduce::TransformReduce", [&](void* temp, std::size_t& bytes) {
        return with_count(ctx.count, [&](auto n) {
          return cub::DeviceReduce::TransformReduce(temp, bytes, in, out, n, op, transform, start, ctx.stream);
        });
      });
    }
  } else {
    ordered_reduce(in, ctx.count, transform, op, start, Traits::empty(), out, *ctx.pool, ctx.stream, ctx.device);
  }
}

// ---- folding partials ----------------------------------------------------------------------

/// out = unwrap(p[0] op p[1] op ... op p[count-1]), or with `init` in front when has_init.
template <class P, class POp, class Out>
__global__ void fold_partials(const P* partials, std::size_t count, POp op, Out* out, P init, bool has_init) {
  P acc = has_init ? init : partials[0];
  for (std::size_t i = has_init ? 0 : 1; i < count; ++i) acc = op(acc, partials[i]);
  *out = static_cast<Out>(unwrap(acc));
}

/// Partials of one operation: where they live and who may touch them when.
template <class P>
class partial_store {
 public:
  /// Room for `count` partials for pieces on `slots` of `group`, rooted at slots[0].
  partial_store(const device_group& group, std::vector<std::size_t> slots, std::size_t count, merge_kind kind)
      : group_(group), slots_(std::move(slots)), route_(group.merge(kind)) {
    group_state& g = group_.state();
    if (route_ == merge_route::device) {
      device_guard guard(g.device(slots_[0]));
      device_.emplace(count, g.pool(slots_[0]), g.stream(slots_[0]));
    } else {
      host_ = g.staging().acquire(count * sizeof(P));
    }
  }
  partial_store(const partial_store&) = delete;
  partial_store& operator=(const partial_store&) = delete;

  P* data() const { return device_ ? device_->data() : host_.template as<P>(); }
  merge_route route() const noexcept { return route_; }

  /// Makes `slot`'s stream ready to write or read the partials: earlier users of the host
  /// block, or the allocation on the root's stream, come first.
  void prepare(std::size_t slot) {
    group_state& g = group_.state();
    if (device_)
      g.order(slots_[0], slot);
    else
      host_.order_before(g.stream(slot));
  }
  /// The partials' last use on `slot` is enqueued.
  void finish(std::size_t slot) {
    group_state& g = group_.state();
    if (device_)
      g.order(slot, slots_[0]);  // the root frees the array after every reader
    else
      host_.fence(g.device(slot), g.stream(slot));
  }

 private:
  device_group group_;
  std::vector<std::size_t> slots_;
  merge_route route_;
  std::optional<device_buffer<P>> device_;
  staging_pool::lease host_;
};

/// Reduces every piece into a partial with `reduce_piece(ctx, P* out, bool first)` (the first
/// piece folds in the caller's init), folds the partials in order on the first piece's
/// device, and returns a future for the unwrapped result. `fallback` is the value of an
/// empty range.
template <class T, class P, class POp, class U, class ReducePiece>
future<T> reduce_pieces(const range_ref<U>& range, POp op, T fallback, ReducePiece&& reduce_piece) {
  if (range.pieces.empty()) return future<T>(fallback);
  const device_group& group = range.group();
  group_state& g = group.state();
  const std::size_t k = range.pieces.size();
  const std::size_t root = range.pieces[0].slot;
  staging_pool::lease result = g.staging().acquire(sizeof(T));
  T* result_slot = result.template as<T>();
  device_guard guard(g.device(root));
  result.order_before(g.stream(root));

  if constexpr (std::is_same_v<P, T>) {
    if (k == 1) {
      // One piece: CUB writes the finished value straight into mapped host memory.
      for_each_piece(range, [&](const piece_context& ctx) { reduce_piece(ctx, result_slot, true); });
      result.fence(g.device(root), g.stream(root));
      event_pool::handle done = g.events().record(g.device(root), g.stream(root));
      return future<T>(group, std::move(result), result_slot, std::move(done));
    }
  }
  {
    std::vector<std::size_t> slots;
    for (const auto& p : range.pieces) slots.push_back(p.slot);
    partial_store<P> partials(group, slots, k, merge_kind::reduction);
    for_each_piece(range, [&](const piece_context& ctx) {
      partials.prepare(ctx.slot);
      reduce_piece(ctx, partials.data() + ctx.index, ctx.index == 0);
      if (ctx.index > 0) g.order(ctx.slot, root);
    });
    guard.set(g.device(root));
    fold_partials<<<1, 1, 0, g.stream(root)>>>(partials.data(), k, op, result_slot, P{}, false);
    check_launch("fold_partials");
    partials.finish(root);
  }
  result.fence(g.device(root), g.stream(root));
  event_pool::handle done = g.events().record(g.device(root), g.stream(root));
  return future<T>(group, std::move(result), result_slot, std::move(done));
}

/// Reduce-then-scan over the pieces of `range`. Pieces 0..k-2 are reduced into partials by
/// `reduce_piece(ctx, P* out, bool first)` (all devices at once); then each piece i > 0 folds
/// the partials before it into a carry in its own device memory, and `scan_piece(ctx, const
/// T* carry)` runs its scan reading that carry at run time (nullptr for piece 0). The last
/// piece's total is needed by nobody and is never computed.
template <class T, class P, class POp, class U, class ReducePiece, class ScanPiece>
void scan_pieces(const range_ref<U>& range, POp op, ReducePiece&& reduce_piece, ScanPiece&& scan_piece) {
  const std::size_t k = range.pieces.size();
  if (k == 0) return;
  if (k == 1) {
    for_each_piece(range, [&](const piece_context& ctx) { scan_piece(ctx, static_cast<const T*>(nullptr)); });
    return;
  }
  const device_group& group = range.group();
  group_state& g = group.state();
  std::vector<std::size_t> slots;
  for (const auto& p : range.pieces) slots.push_back(p.slot);
  partial_store<P> partials(group, slots, k - 1, merge_kind::scan);
  std::vector<event_pool::handle> produced(k - 1);
  for_each_piece(range, [&](const piece_context& ctx) {
    if (ctx.index + 1 == k) return;
    partials.prepare(ctx.slot);
    reduce_piece(ctx, partials.data() + ctx.index, ctx.index == 0);
    produced[ctx.index] = g.events().record(ctx.device, ctx.stream);
  });
  for_each_piece(range, [&](const piece_context& ctx) {
    if (ctx.index == 0) {
      scan_piece(ctx, static_cast<const T*>(nullptr));
      return;
    }
    partials.prepare(ctx.slot);
    for (std::size_t j = 0; j < ctx.index; ++j) produced[j].order_before(ctx.stream);
    device_buffer<T> carry(1, *ctx.pool, ctx.stream);
    fold_partials<<<1, 1, 0, ctx.stream>>>(partials.data(), ctx.index, op, carry.data(), P{}, false);
    check_launch("fold_partials");
    partials.finish(ctx.slot);
    scan_piece(ctx, static_cast<const T*>(carry.data()));
  });
}

}  // namespace multigpu::detail

namespace multigpu {
namespace detail {
/// An operator declared commutative by its user: reductions may then use CUB's fastest
/// (reordering) path instead of the order-keeping one.
template <class Op>
struct commutative_op {
  Op op;
  template <class A, class B>
  __host__ __device__ auto operator()(const A& a, const B& b) const -> decltype(op(a, b)) {
    return op(a, b);
  }
};
}  // namespace detail

/// Declares a reduction operator commutative (and associative), e.g.
/// `mg::reduce(v, init, mg::commutative(my_op))`.
template <class Op>
detail::commutative_op<Op> commutative(Op op) {
  return {op};
}

}  // namespace multigpu
