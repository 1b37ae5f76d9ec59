#pragma once
// How the elements of a vector are laid out over the slots of its group: one contiguous
// segment per slot, described by the segments' starting offsets. Pure host arithmetic.
//
// The block layout (sizes differing by at most one, larger segments first) is what
// containers use; explicit sizes describe any other layout (weighted splits, or temporaries
// that must line up with part of another vector).

#include <multigpu/core/piece.hpp>
#include <multigpu/container/piece_list.hpp>

#include <cstddef>
#include <span>
#include <vector>

namespace multigpu {

class distribution {
 public:
  /// Global index i lives in `segment` at `local`.
  struct location {
    std::size_t segment;
    std::size_t local;
    friend bool operator==(const location&, const location&) = default;
  };

  distribution() : offsets_{0} {}
  /// n elements over k segments, as even as possible: the first n % k segments hold one
  /// element more. k must be positive.
  static distribution block(std::size_t n, std::size_t k);
  /// Segments of the given sizes, in order.
  static distribution from_sizes(std::span<const std::size_t> sizes);

  std::size_t size() const noexcept { return offsets_.back(); }
  std::size_t segment_count() const noexcept { return offsets_.size() - 1; }
  std::size_t segment_offset(std::size_t s) const { return offsets_.at(s); }
  std::size_t segment_size(std::size_t s) const { return offsets_.at(s + 1) - offsets_.at(s); }

  /// The segment and local index of global index i (i < size(), else std::out_of_range).
  location locate(std::size_t i) const;
  /// The pieces covering [first, last), in global order, one per segment it touches
  /// (segments it does not touch are left out). first <= last <= size().
  std::vector<piece> split(std::size_t first, std::size_t last) const;
  /// The same pieces into `out` (cleared first), with no allocation for up to
  /// piece_list::inline_capacity pieces: what the algorithms use on every call.
  void split_into(std::size_t first, std::size_t last, piece_list& out) const;

  friend bool operator==(const distribution&, const distribution&) = default;

 private:
  std::vector<std::size_t> offsets_;  // segment_count() + 1 entries, offsets_[0] == 0
};

/// Two ranges line up when they split into pieces on the same slots with the same counts:
/// then element-wise work runs segment by segment with no data movement.
bool aligned(std::span<const piece> a, std::span<const piece> b) noexcept;

}  // namespace multigpu
