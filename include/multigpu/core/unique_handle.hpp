#pragma once
// One move-only owner for every CUDA resource the library holds (streams, events, pooled
// events, pinned host memory, pool allocations): a handle plus a deleter that knows how to
// give it back, like std::unique_ptr for handles that are not pointers to objects. The
// deleter is called once, with a handle that is not null, and must not throw.

#include <utility>

namespace multigpu {

template <class Handle, class Deleter>
class unique_handle {
 public:
  unique_handle() = default;
  unique_handle(Handle handle, Deleter deleter) noexcept : handle_(handle), deleter_(std::move(deleter)) {}
  ~unique_handle() { reset(); }
  unique_handle(unique_handle&& other) noexcept
      : handle_(std::exchange(other.handle_, Handle{})), deleter_(std::move(other.deleter_)) {}
  unique_handle& operator=(unique_handle&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, Handle{});
      deleter_ = std::move(other.deleter_);
    }
    return *this;
  }
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;

  Handle get() const noexcept { return handle_; }
  const Deleter& deleter() const noexcept { return deleter_; }
  explicit operator bool() const noexcept { return handle_ != Handle{}; }
  /// Gives the handle back through the deleter now; the owner is then empty.
  void reset() noexcept {
    if (handle_ != Handle{}) deleter_(handle_);
    handle_ = Handle{};
  }

 private:
  Handle handle_{};
  Deleter deleter_{};
};

}  // namespace multigpu
