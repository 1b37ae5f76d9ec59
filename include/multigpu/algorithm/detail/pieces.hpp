#pragma once
// How an algorithm sees its operands: a reference range split into per-slot pieces, and
// every other operand either lined up with it (same group, same slots, same counts, so each
// device works on its own memory) or copied into a temporary that is lined up. Unaligned
// operands therefore work but cost a redistribution; aligned ones cost nothing.

#include <multigpu/container/distributed_vector.hpp>
#include <multigpu/core/device_guard.hpp>
#include <multigpu/core/diagnostics.hpp>
#include <multigpu/core/event_pool.hpp>
#include <multigpu/core/nvtx.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/detail/executor.hpp>
#include <multigpu/runtime/detail/scratch.hpp>

#include <initializer_list>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

namespace multigpu::detail {

/// A range [first, first + count) of a vector, split into its pieces: what a call reads.
/// Its data(i) is const; a call that writes the range names it with mutable_range_ref.
template <class T>
struct range_ref {
  const distributed_vector<T>* vector;
  std::size_t first;
  std::size_t count;
  piece_list pieces;

  range_ref(const distributed_vector<T>& v, std::size_t first_, std::size_t count_)
      : vector(&v), first(first_), count(count_) {
    v.layout().split_into(first_, first_ + count_, pieces);
  }
  const device_group& group() const { return vector->group(); }
  /// Device pointer to the start of piece i.
  const T* data(std::size_t i) const { return vector->segment(pieces[i].slot).data() + pieces[i].local_offset; }
  /// Element i of the range, read after the work already enqueued on its slot's stream.
  T read(std::size_t i) const { return vector->read(first + i); }
  /// Elements positions[j] of the range, as distributed_vector::read of indices: one wait for them all.
  std::vector<T> read(std::span<const std::size_t> positions) const {
    std::vector<std::size_t> indices(positions.begin(), positions.end());
    for (std::size_t& i : indices) i += first;
    return vector->read(std::span<const std::size_t>(indices));
  }
};

/// A range_ref that the call writes: made from a vector it may change, so its data(i) is
/// writable. It is a range_ref, and goes wherever one goes; through a `const range_ref&` its
/// data(i) is the read-only one (it hides, not overrides, so a write that way does not compile).
template <class T>
struct mutable_range_ref : range_ref<T> {
  mutable_range_ref(distributed_vector<T>& v, std::size_t first_, std::size_t count_)
      : range_ref<T>(v, first_, count_), target(&v) {}
  /// Writable device pointer to the start of piece i.
  T* data(std::size_t i) const { return target->segment(this->pieces[i].slot).data() + this->pieces[i].local_offset; }

  distributed_vector<T>* target;
};

/// A layout of `reference`'s group whose block [0, count) splits into exactly the pieces of
/// `reference`: a temporary with it lines up with the reference range.
template <class T>
distribution layout_like(const range_ref<T>& reference) {
  std::vector<std::size_t> sizes(reference.group().size(), 0);
  for (const auto& p : reference.pieces) sizes[p.slot] = p.count;
  return distribution::from_sizes(sizes);
}

/// True when a and b are one vector (their element types may differ, and then they are not).
template <class A, class B>
bool same_vector(const A& a, const B& b) noexcept {
  return static_cast<const void*>(&a) == static_cast<const void*>(&b);
}

/// True when [a_first, a_first + count) of `a` and [b_first, b_first + count) of `b` share an
/// element: the same vector, ranges that meet.
template <class A, class B>
bool overlaps(const distributed_vector<A>& a, std::size_t a_first, const distributed_vector<B>& b,
              std::size_t b_first, std::size_t count) noexcept {
  return same_vector(a, b) && count > 0 && a_first < b_first + count && b_first < a_first + count;
}

/// True when [a_first, a_first + count) of `a` and [b_first, b_first + count) of `b` are
/// the same vector's elements partly in common but not from the same index: the case in
/// which an element-wise call done in place would read elements it already overwrote.
template <class A, class B>
bool overlaps_shifted(const distributed_vector<A>& a, std::size_t a_first, const distributed_vector<B>& b,
                      std::size_t b_first, std::size_t count) noexcept {
  if constexpr (!std::is_same_v<A, B>) {
    return false;
  } else {
    if (&a != &b || a_first == b_first || count == 0) return false;
    return a_first < b_first ? b_first - a_first < count : a_first - b_first < count;
  }
}

/// An input operand lined up with a reference range: the operand itself when it is aligned,
/// otherwise a lined-up temporary holding a copy of it.
template <class U>
class aligned_input {
 public:
  template <class T>
  aligned_input(const range_ref<T>& reference, const distributed_vector<U>& v, std::size_t first)
      : range_(v, first, reference.count) {
    if (v.group() == reference.group() && aligned(range_.pieces, reference.pieces)) return;
    diagnostics::note(diagnostics::path::redistributed_operand);
    temp_.emplace(reference.group(), layout_like(reference));
    detail::vector_access::copy_range_from(*temp_, v, first, reference.count, 0);
    range_ = range_ref<U>(*temp_, 0, reference.count);
  }
  const U* data(std::size_t i) const { return range_.data(i); }

 private:
  range_ref<U> range_;
  std::optional<distributed_vector<U>> temp_;
};

/// An output operand lined up with a reference range. When the output is not aligned,
/// results go to a lined-up temporary and commit() moves them into place.
template <class U>
class aligned_output {
 public:
  /// `stage` forces the temporary; so does an output that overlaps the reference range of
  /// the same vector at another index (a shifted in-place call), which written in place
  /// would overwrite elements before they are read.
  template <class T>
  aligned_output(const range_ref<T>& reference, distributed_vector<U>& v, std::size_t first, bool stage = false)
      : target_(&v), first_(first), range_(v, first, reference.count) {
    stage = stage || overlaps_shifted(*reference.vector, reference.first, v, first, reference.count);
    const bool lined_up = v.group() == reference.group() && aligned(range_.pieces, reference.pieces);
    if (!stage && lined_up) return;
    if (!lined_up) diagnostics::note(diagnostics::path::redistributed_output);
    temp_.emplace(reference.group(), layout_like(reference));
    range_ = mutable_range_ref<U>(*temp_, 0, reference.count);
  }
  U* data(std::size_t i) const { return range_.data(i); }
  /// Element i of the results (staged or in place), read after the work already enqueued.
  U read(std::size_t i) const { return range_.read(i); }
  /// Elements positions[j] of the results, with one wait for them all.
  std::vector<U> read(std::span<const std::size_t> positions) const { return range_.read(positions); }
  bool staged() const noexcept { return temp_.has_value(); }
  /// Moves staged results into the real output (no-op when aligned).
  void commit() {
    if (temp_) detail::vector_access::copy_range_from(*target_, *temp_, 0, range_.count, first_);
  }

 private:
  distributed_vector<U>* target_;
  std::size_t first_;
  mutable_range_ref<U> range_;
  std::optional<distributed_vector<U>> temp_;
};

/// Runs `step(piece_context)` for every piece of `reference`, each with its device current and
/// its work going to `streams` (those the executor handed to the collective being enqueued).
/// The group's executor decides the threads (runtime/detail/executor.hpp), so steps must not
/// depend on each other's host-side effects. Nothing waits for the devices.
template <class T, class Step>
void for_each_piece(const range_ref<T>& reference, const slot_streams& streams, Step&& step) {
  if (reference.pieces.empty()) return;
  executor_of(reference.group()).for_each(reference.pieces, streams, step);
}

/// for_each_piece on the slots' own streams: the steps of a call that is not a collective.
template <class T, class Step>
void for_each_piece(const range_ref<T>& reference, Step&& step) {
  if (reference.pieces.empty()) return;
  for_each_piece(reference, executor_of(reference.group()).streams(), step);
}

/// The end of a call that blocks and whose last step copies into other vectors: waits for
/// every slot's stream of each of `groups` (each group once; null entries skipped). A copy
/// between vectors is ordered before later work on its destination's streams, so waiting for
/// the outputs' groups waits for the copies (docs/api.md#blocking-at-a-glance).
inline void wait_for_groups(std::initializer_list<const device_group*> groups) {
  std::vector<const device_group*> waited;
  for (const device_group* g : groups) {
    if (g == nullptr) continue;
    bool seen = false;
    for (const device_group* w : waited) seen = seen || *w == *g;
    if (seen) continue;
    g->synchronize();
    waited.push_back(g);
  }
}

/// Throws std::invalid_argument naming both lengths unless they are equal.
inline void expect_same_length(const char* algorithm, std::size_t a, std::size_t b) {
  MULTIGPU_EXPECTS(a == b, concat(algorithm, ": the input has ", a,
                                  " elements but the other range has ", b,
                                  "; they must be the same length"));
}

/// The vector behind `it`, where an algorithm writes (or, for a second input, reads) `count`
/// elements from it: std::invalid_argument unless it belongs to a vector (a
/// default-constructed iterator does not) with room for them, naming the length and the
/// room. `role` says which operand it is ("output", "second input").
template <class I>
auto& unpack_output(const char* algorithm, I it, std::size_t count, const char* role = "output") {
  MULTIGPU_EXPECTS(it.container() != nullptr,
                   concat(algorithm, ": the ", role, " iterator does not belong to a vector (default-constructed?)",
                          " but ", count, " elements go through it"));
  const std::size_t size = it.container()->size();
  const std::size_t room = it.index() <= size ? size - it.index() : 0;
  MULTIGPU_EXPECTS(count <= room, concat(algorithm, ": the input has ", count, " elements but the ", role,
                                         " has ", room, " from index ", it.index(), " (vector size ", size,
                                         "): it must have room for all of them"));
  return *it.container();
}

/// The (vector, first, last) behind an iterator range, with checks.
template <class I>
auto unpack_range(const char* algorithm, I first, I last) {
  MULTIGPU_EXPECTS(first.container() == last.container(),
                   concat(algorithm, ": first and last belong to different vectors"));
  MULTIGPU_EXPECTS(first <= last, concat(algorithm, ": first (index ", first.index(),
                                         ") is after last (index ", last.index(), ")"));
  MULTIGPU_EXPECTS(first.container() != nullptr || first == last,
                   concat(algorithm, ": the iterators do not belong to a vector"));
  // A first iterator before the beginning (begin() - 1) still compares before last, and its
  // index wraps to one past every size: the signed index names it.
  MULTIGPU_EXPECTS_AS(first.container() == nullptr || first.index() <= first.container()->size(),
                      std::out_of_range,
                      concat(algorithm, ": the range starts at index ", static_cast<std::ptrdiff_t>(first.index()),
                             ", outside a vector of size ", first.container() ? first.container()->size() : 0));
  MULTIGPU_EXPECTS_AS(first.container() == nullptr || last.index() <= first.container()->size(),
                      std::out_of_range,
                      concat(algorithm, ": the range ends at index ", last.index(),
                             " past the end of a vector of size ",
                             first.container() ? first.container()->size() : 0));
  return std::tuple{first.container(), first.index(), last.index() - first.index()};
}

}  // namespace multigpu::detail
