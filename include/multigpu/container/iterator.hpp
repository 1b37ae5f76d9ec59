#pragma once
// Random-access iterators over the global index space of a distributed_vector. They are
// (vector, index) pairs: arithmetic and comparison are plain index arithmetic on the host;
// dereferencing reads (or, through device_reference, writes) one element on its device.
// Algorithms never dereference them: they split [first, last) into per-segment pieces.

#include <compare>
#include <concepts>
#include <cstddef>
#include <iterator>
#include <ranges>
#include <type_traits>

namespace multigpu {

template <class T>
class distributed_vector;

/// A proxy for one element on a device: converts to T by reading it, assignment writes it.
/// Each access is a small copy plus a stream synchronisation: fine for a few elements,
/// never for bulk work (use an algorithm or for_each_segment).
template <class T>
class device_reference {
 public:
  using value_type = T;
  device_reference(distributed_vector<T>& vector, std::size_t index) noexcept
      : vector_(&vector), index_(index) {}
  device_reference(const device_reference&) = default;

  T get() const { return vector_->read(index_); }
  operator T() const { return get(); }
  const device_reference& operator=(const T& value) const {
    vector_->write(index_, value);
    return *this;
  }
  const device_reference& operator=(const device_reference& other) const { return *this = other.get(); }
  device_reference& operator=(const T& value) {
    vector_->write(index_, value);
    return *this;
  }
  device_reference& operator=(const device_reference& other) { return *this = other.get(); }

  friend void swap(device_reference a, device_reference b) {
    T t = a.get();
    a = b.get();
    b = t;
  }

 private:
  distributed_vector<T>* vector_;
  std::size_t index_;
};

template <class T, bool Const>
class segmented_iterator {
 public:
  using vector_type = std::conditional_t<Const, const distributed_vector<T>, distributed_vector<T>>;
  using value_type = T;
  using difference_type = std::ptrdiff_t;
  using reference = std::conditional_t<Const, T, device_reference<T>>;
  using pointer = void;
  using iterator_category = std::random_access_iterator_tag;
  using iterator_concept = std::random_access_iterator_tag;

  segmented_iterator() = default;
  segmented_iterator(vector_type* vector, difference_type index) noexcept
      : vector_(vector), index_(index) {}
  /// iterator converts to const_iterator.
  template <bool OtherConst>
    requires(Const && !OtherConst)
  segmented_iterator(const segmented_iterator<T, OtherConst>& other) noexcept
      : vector_(other.container()), index_(static_cast<difference_type>(other.index())) {}

  reference operator*() const { return (*vector_)[static_cast<std::size_t>(index_)]; }
  reference operator[](difference_type n) const { return *(*this + n); }

  segmented_iterator& operator++() noexcept { ++index_; return *this; }
  segmented_iterator operator++(int) noexcept { auto t = *this; ++index_; return t; }
  segmented_iterator& operator--() noexcept { --index_; return *this; }
  segmented_iterator operator--(int) noexcept { auto t = *this; --index_; return t; }
  segmented_iterator& operator+=(difference_type n) noexcept { index_ += n; return *this; }
  segmented_iterator& operator-=(difference_type n) noexcept { index_ -= n; return *this; }
  friend segmented_iterator operator+(segmented_iterator i, difference_type n) noexcept { return i += n; }
  friend segmented_iterator operator+(difference_type n, segmented_iterator i) noexcept { return i += n; }
  friend segmented_iterator operator-(segmented_iterator i, difference_type n) noexcept { return i -= n; }
  friend difference_type operator-(const segmented_iterator& a, const segmented_iterator& b) noexcept {
    return a.index_ - b.index_;
  }
  friend bool operator==(const segmented_iterator& a, const segmented_iterator& b) noexcept {
    return a.index_ == b.index_;
  }
  friend auto operator<=>(const segmented_iterator& a, const segmented_iterator& b) noexcept {
    return a.index_ <=> b.index_;
  }

  /// The vector this iterator walks, and its global index in it.
  vector_type* container() const noexcept { return vector_; }
  std::size_t index() const noexcept { return static_cast<std::size_t>(index_); }

 private:
  vector_type* vector_ = nullptr;
  difference_type index_ = 0;
};

/// True for iterators of distributed_vector (algorithms overload on it).
template <class I>
inline constexpr bool is_segmented_iterator_v = false;
template <class T, bool Const>
inline constexpr bool is_segmented_iterator_v<segmented_iterator<T, Const>> = true;
template <class I>
concept segmented_iterator_type = is_segmented_iterator_v<std::remove_cvref_t<I>>;

/// A view of part of a distributed_vector whose begin and end are segmented iterators:
/// std::ranges::subrange(v.begin() + 3, v.end()), std::views::counted(v.begin() + 1, 5),
/// std::views::take(v, 8), ... Every algorithm that takes [first, last) also takes one of
/// these in its place (the vector itself is not a view: it has overloads of its own).
template <class R>
concept segmented_range = std::ranges::view<std::remove_cvref_t<R>> && std::ranges::common_range<R> &&
                          segmented_iterator_type<std::ranges::iterator_t<R>>;

}  // namespace multigpu

// The proxy and its value type have T as their common reference, which is what makes the
// iterators satisfy std::random_access_iterator (as std::vector<bool>'s do in C++23).
template <class T, template <class> class TQ, template <class> class UQ>
struct std::basic_common_reference<multigpu::device_reference<T>, T, TQ, UQ> {
  using type = T;
};
template <class T, template <class> class TQ, template <class> class UQ>
struct std::basic_common_reference<T, multigpu::device_reference<T>, TQ, UQ> {
  using type = T;
};
