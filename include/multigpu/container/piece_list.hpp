#pragma once
// The pieces of one range, as the algorithms hold them on every call: in place for up to
// eight pieces (a range over a group of up to eight slots), on the heap only beyond, so
// that splitting a range allocates nothing on the hot path of groups that size.

#include <multigpu/core/piece.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <utility>
#include <vector>

namespace multigpu {

class piece_list {
 public:
  static constexpr std::size_t inline_capacity = 8;

  piece_list() = default;
  piece_list(const piece_list&) = default;
  piece_list& operator=(const piece_list&) = default;
  /// A moved-from list is empty, as a moved-from std::vector is.
  piece_list(piece_list&& other) noexcept
      : inline_(other.inline_), size_(std::exchange(other.size_, 0)), heap_(std::move(other.heap_)) {
    other.heap_.clear();
  }
  piece_list& operator=(piece_list&& other) noexcept {
    if (this != &other) {
      inline_ = other.inline_;
      size_ = std::exchange(other.size_, 0);
      heap_ = std::move(other.heap_);
      other.heap_.clear();
    }
    return *this;
  }

  void push_back(const piece& p) {
    if (size_ < inline_capacity) {
      inline_[size_] = p;
    } else {
      if (size_ == inline_capacity) heap_.assign(inline_.begin(), inline_.end());
      heap_.push_back(p);
    }
    ++size_;
  }
  void clear() noexcept {
    size_ = 0;
    heap_.clear();
  }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  const piece* data() const noexcept { return size_ <= inline_capacity ? inline_.data() : heap_.data(); }
  const piece* begin() const noexcept { return data(); }
  const piece* end() const noexcept { return data() + size_; }
  const piece& operator[](std::size_t i) const noexcept { return data()[i]; }
  const piece& front() const noexcept { return data()[0]; }
  const piece& back() const noexcept { return data()[size_ - 1]; }
  operator std::span<const piece>() const noexcept { return {data(), size_}; }

  friend bool operator==(const piece_list& a, const piece_list& b) noexcept {
    if (a.size_ != b.size_) return false;
    for (std::size_t i = 0; i < a.size_; ++i)
      if (!(a[i] == b[i])) return false;
    return true;
  }

 private:
  std::array<piece, inline_capacity> inline_{};
  std::size_t size_ = 0;
  std::vector<piece> heap_;  // every piece, once there are more than inline_capacity
};

}  // namespace multigpu
