#pragma once
// Replicated scalars (docs/mdarray.md#replicated-scalars): a reduction whose result stays in
// device memory, one copy per slot, each written in order on its slot's stream. The next
// kernel on that stream reads it through a trivially copyable replicated_ref, so an iteration
// (exchange, stencil, norm, update) runs with no host round trip.
//
// One call: a local step per slot (its tile or segment reduced by CUB into a partial in the
// slot's own row of partials, with temporary storage from the slot's pool), an all-gather of
// the partials (copy_between: peer copies, or staging through pinned memory, ordered by
// events), then one fold per slot, in slot order, into its copy of the result.

#include <multigpu/algorithm/detail/cuda_only.hpp>
#include <multigpu/algorithm/detail/local/cub_call.hpp>
#include <multigpu/container/detail/fill_bytes.hpp>
#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/mdarray/distributed_mdarray.hpp>
#include <multigpu/mdarray/for_each_tile.hpp>
#include <multigpu/mdarray/per_slot.hpp>
#include <multigpu/memory/device_buffer.hpp>
#include <multigpu/runtime/device_group.hpp>
#include <multigpu/runtime/detail/group_resources.hpp>
#include <multigpu/transfer/device_copy.hpp>
#include <multigpu/transfer/element_copy.hpp>

#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

namespace multigpu {

/// A slot's copy of a replicated value, for device code on that slot's stream.
template <class T>
struct replicated_ref {
  const T* pointer = nullptr;
  __host__ __device__ const T& operator*() const { return *pointer; }
  __host__ __device__ T get() const { return *pointer; }
};

namespace detail {
/// A partial that may hold nothing (an empty tile): reductions need no identity element.
template <class U>
struct partial_value {
  U value;
  bool has;
};
template <class U, class Op>
struct partial_op {
  Op op;
  __host__ __device__ partial_value<U> operator()(const partial_value<U>& a, const partial_value<U>& b) const {
    if (!a.has) return b;
    if (!b.has) return a;
    return {static_cast<U>(op(a.value, b.value)), true};
  }
};
/// The k-th index, row-major, of a box of `extent`.
template <std::size_t Rank>
__host__ __device__ md_point<Rank> row_major_index(std::uint64_t k, const md_point<Rank>& extent) {
  md_point<Rank> i;
  for (std::size_t d = Rank; d-- > 0;) {
    i[d] = static_cast<std::size_t>(k % extent[d]);
    k /= extent[d];
  }
  return i;
}
/// k -> the transformed element at the k-th interior index (row-major) of a tile.
template <class T, class U, std::size_t Rank, class F>
struct tile_reader {
  tile_ref<T, Rank> tile;
  md_point<Rank> extent;
  F f;
  __host__ __device__ partial_value<U> operator()(std::uint64_t k) const {
    return {static_cast<U>(f(tile(row_major_index(k, extent)))), true};
  }
};
/// k -> f(a(i), b(i)) at the k-th interior index i (row-major) of two tiles of one shape.
template <class A, class B, class U, std::size_t Rank, class F>
struct tile_pair_reader {
  tile_ref<A, Rank> a;
  tile_ref<B, Rank> b;
  md_point<Rank> extent;
  F f;
  __host__ __device__ partial_value<U> operator()(std::uint64_t k) const {
    const md_point<Rank> i = row_major_index(k, extent);
    return {static_cast<U>(f(a(i), b(i))), true};
  }
};
template <class T, class U, class F>
struct segment_reader {
  const T* data;
  F f;
  __host__ __device__ partial_value<U> operator()(std::uint64_t k) const { return {static_cast<U>(f(data[k])), true}; }
};
struct identity_op {
  template <class X>
  __host__ __device__ const X& operator()(const X& x) const {
    return x;
  }
};
/// value = init, then op(value, p[t].value) for every partial that holds one, in slot order.
template <class U, class Op>
__global__ void fold_partials_kernel(const partial_value<U>* partials, std::size_t count, U init, Op op, U* value) {
  U v = init;
  for (std::size_t t = 0; t < count; ++t)
    if (partials[t].has) v = static_cast<U>(op(v, partials[t].value));
  *value = v;
}
}  // namespace detail

/// One value per slot of a group, in device memory: what reduce_replicated leaves. Move-only.
template <class T>
class replicated {
  static_assert(std::is_trivially_copyable_v<T> && std::is_default_constructible_v<T>,
                "multigpu::replicated<T> needs a trivially copyable, default-constructible T");

 public:
  /// T{} on every slot.
  explicit replicated(device_group group = default_group()) : replicated(std::move(group), T{}) {}
  /// `value` on every slot (a residual that starts above any tolerance, say).
  replicated(device_group group, const T& value) : group_(std::move(group)) {
    const std::size_t k = group_.size();
    for (std::size_t s = 0; s < k; ++s) {
      device_guard guard(group_.device(s));
      values_.emplace_back(1, group_.pool(s), group_.stream(s));
      partials_.emplace_back(k, group_.pool(s), group_.stream(s));
      detail::fill_bytes(values_.back().data(), 1, &value, sizeof(T), group_.stream(s));
      MULTIGPU_CUDA_TRY(cudaMemsetAsync(partials_.back().data(), 0, partials_.back().size_bytes(), group_.stream(s)));
    }
  }
  replicated(replicated&&) noexcept = default;
  replicated& operator=(replicated&&) noexcept = default;

  const device_group& group() const noexcept { return group_; }
  /// Writes `value` into every slot's copy, each in order on its slot's stream. No host wait.
  void assign(const T& value) {
    for (std::size_t s = 0; s < values_.size(); ++s) {
      device_guard guard(group_.device(s));
      detail::fill_bytes(values_[s].data(), 1, &value, sizeof(T), group_.stream(s));
    }
  }
  /// Slot `slot`'s copy, for kernels on that slot's stream.
  replicated_ref<T> ref(std::size_t slot) const { return {values_.at(slot).data()}; }
  /// Slot `slot`'s copy on the host: waits for that slot's stream.
  T get(std::size_t slot = 0) const {
    T value{};
    const transfer::element_place at{group_.device(slot), group_.stream(slot), values_.at(slot).data(), false};
    transfer::read_elements(detail::resources_of(group_), std::span(&at, 1), sizeof(T), &value);
    return value;
  }

  // Internal: the reductions write these.
  detail::partial_value<T>* partials_of(std::size_t slot) const { return partials_.at(slot).data(); }
  T* value_of(std::size_t slot) const { return values_.at(slot).data(); }

 private:
  device_group group_;
  std::vector<device_buffer<T>> values_;                      // one element per slot
  std::vector<device_buffer<detail::partial_value<T>>> partials_;  // every slot's partial, per slot
};

namespace detail {

/// Slot s's partial into its own row, on its stream: CUB over `count` items read by `reader`, or
/// "nothing" for an empty slot.
template <class U, class Op, class Reader>
void local_partial(replicated<U>& out, std::size_t slot, std::size_t count, Reader reader, Op op) {
  const device_group& g = out.group();
  device_guard guard(g.device(slot));
  partial_value<U>* target = out.partials_of(slot) + slot;
  if (count == 0) {
    MULTIGPU_CUDA_TRY(cudaMemsetAsync(target, 0, sizeof(partial_value<U>), g.stream(slot)));
    return;
  }
  auto items = thrust::make_transform_iterator(thrust::counting_iterator<std::uint64_t>(0), reader);
  const partial_op<U, Op> combine{op};
  const partial_value<U> nothing{U{}, false};
  cub_call(g.pool(slot), g.stream(slot), "cub::DeviceReduce::Reduce", [&](void* temp, std::size_t& bytes) {
    return cub::DeviceReduce::Reduce(temp, bytes, items, target, static_cast<std::int64_t>(count), combine, nothing,
                                     g.stream(slot));
  });
}

/// Every slot gathers the others' partials and folds them in slot order after init.
template <class U, class Op>
void gather_and_fold(replicated<U>& out, U init, Op op) {
  const device_group& g = out.group();
  const std::size_t k = g.size();
  std::vector<transfer::byte_move> moves;
  for (std::size_t from = 0; from < k; ++from)
    for (std::size_t to = 0; to < k; ++to)
      if (from != to)
        moves.push_back({from, out.partials_of(from) + from, to, out.partials_of(to) + from, sizeof(partial_value<U>)});
  transfer::copy_between(g, g, moves);
  for (std::size_t s = 0; s < k; ++s) {
    device_guard guard(g.device(s));
    fold_partials_kernel<U, Op><<<1, 1, 0, g.stream(s)>>>(out.partials_of(s), k, init, op, out.value_of(s));
    check_launch("mdarray fold of replicated partials");
    observe_work(g.stream(s), "fold replicated partials");
  }
}

/// Every slot's partial over its tile of `a`, read by reader_of(slot, extent), into the slot's
/// own row of out's partials.
template <class T, std::size_t Rank, class U, class Op, class ReaderOf>
void tile_partials(const distributed_mdarray<T, Rank>& a, Op reduce_op, replicated<U>& out, ReaderOf reader_of) {
  for (std::size_t s = 0; s < a.tile_count(); ++s) {
    const md_index<Rank> e = a.layout().tile_extents(s);
    md_point<Rank> extent;
    for (std::size_t d = 0; d < Rank; ++d) extent[d] = e[d];
    local_partial(out, s, a.tile(s).empty() ? 0 : product(e), reader_of(s, extent), reduce_op);
  }
}

/// reader_of for transform(x) over the tiles of `a` (transform may be per_slot{make}).
template <class U, class T, std::size_t Rank, class F>
auto transformed_tiles(const distributed_mdarray<T, Rank>& a, const F& transform) {
  return [&a, &transform](std::size_t s, const md_point<Rank>& extent) {
    auto f = bind_slot(transform, s);
    return tile_reader<T, U, Rank, decltype(f)>{a.tile(s).ref(), extent, f};
  };
}

/// Every slot's partial, then folded on every slot: the mdarray forms of
/// transform_reduce_replicated.
template <class T, std::size_t Rank, class U, class Op, class ReaderOf>
void reduce_tiles_replicated(const distributed_mdarray<T, Rank>& a, U init, Op reduce_op, replicated<U>& out,
                             ReaderOf reader_of) {
  MULTIGPU_EXPECTS(out.group() == a.group(), "reduce_replicated: the result must be on the array's group");
  tile_partials(a, reduce_op, out, reader_of);
  gather_and_fold(out, init, reduce_op);
}
}  // namespace detail

/// out = init op transform(x) op ... over every element of `a` (interiors), on every slot of
/// a's group, each copy ordered on its slot's stream; no host wait. reduce_op must be
/// associative and commutative (tiles interleave in row-major order) and callable on the
/// device; transform may be per_slot{make}. `out` must be on a's group.
template <class T, std::size_t Rank, class U, class Op, class F>
void transform_reduce_replicated(const distributed_mdarray<T, Rank>& a, U init, Op reduce_op, F transform,
                                 replicated<U>& out) {
  const nvtx_range range("mdarray reduce_replicated", a.size());
  detail::reduce_tiles_replicated(a, init, reduce_op, out, detail::transformed_tiles<U>(a, transform));
}

/// out = init op transform(a(i), b(i)) op ... over every interior index i (the largest change
/// between two iterates, with no third array to hold it), as the one-array form. a and b
/// must have the same extents and tiles (std::invalid_argument otherwise).
template <class A, class B, std::size_t Rank, class U, class Op, class F>
void transform_reduce_replicated(const distributed_mdarray<A, Rank>& a, const distributed_mdarray<B, Rank>& b, U init,
                                 Op reduce_op, F transform, replicated<U>& out) {
  const nvtx_range range("mdarray reduce_replicated of two arrays", a.size());
  detail::expect_same_tiles(a, b, "transform_reduce_replicated");
  detail::reduce_tiles_replicated(a, init, reduce_op, out, [&](std::size_t s, const detail::md_point<Rank>& extent) {
    auto f = detail::bind_slot(transform, s);
    return detail::tile_pair_reader<A, B, U, Rank, decltype(f)>{a.tile(s).ref(), b.tile(s).ref(), extent, f};
  });
}

template <class T, std::size_t Rank, class U, class Op>
void reduce_replicated(const distributed_mdarray<T, Rank>& a, U init, Op op, replicated<U>& out) {
  transform_reduce_replicated(a, init, op, detail::identity_op{}, out);
}

/// The same, into a new replicated value.
template <class T, std::size_t Rank, class U, class Op>
replicated<U> reduce_replicated(const distributed_mdarray<T, Rank>& a, U init, Op op) {
  replicated<U> out(a.group());
  reduce_replicated(a, init, op, out);
  return out;
}

/// Vectors: init op transform(v[0]) op ... on every slot of v's group.
template <class T, class U, class Op, class F>
void transform_reduce_replicated(const distributed_vector<T>& v, U init, Op reduce_op, F transform, replicated<U>& out) {
  const nvtx_range range("vector reduce_replicated", v.size());
  MULTIGPU_EXPECTS(out.group() == v.group(), "reduce_replicated: the result must be on the vector's group");
  for (std::size_t s = 0; s < v.segment_count(); ++s) {
    const auto seg = v.segment(s);
    auto f = detail::bind_slot(transform, s);
    detail::local_partial(out, s, seg.size(), detail::segment_reader<T, U, decltype(f)>{seg.data(), f}, reduce_op);
  }
  detail::gather_and_fold(out, init, reduce_op);
}

template <class T, class U, class Op>
void reduce_replicated(const distributed_vector<T>& v, U init, Op op, replicated<U>& out) {
  transform_reduce_replicated(v, init, op, detail::identity_op{}, out);
}

template <class T, class U, class Op>
replicated<U> reduce_replicated(const distributed_vector<T>& v, U init, Op op) {
  replicated<U> out(v.group());
  reduce_replicated(v, init, op, out);
  return out;
}

}  // namespace multigpu
