#pragma once
// The handle an _async algorithm returns: get() waits for the devices and hands back the
// finished value. The value lands in pinned, mapped host memory written by the last
// kernel, so waiting is one event synchronisation and reading is a host load.

#include <multigpu/core/event_pool.hpp>
#include <multigpu/memory/staging_pool.hpp>
#include <multigpu/runtime/device_group.hpp>

#include <optional>
#include <stdexcept>
#include <utility>

namespace multigpu {

template <class T>
class future {
 public:
  future() = default;
  /// An already-known value (an empty range's reduction is its init).
  explicit future(T value) : value_(value) {}
  /// A value that `done` will mark written at `result` (inside `storage`).
  future(device_group group, staging_pool::lease storage, const T* result, event_pool::handle done)
      : group_(std::move(group)), storage_(std::move(storage)), result_(result), done_(std::move(done)) {}

  future(future&& other) noexcept
      : group_(std::move(other.group_)),
        storage_(std::move(other.storage_)),
        result_(std::exchange(other.result_, nullptr)),
        done_(std::move(other.done_)),
        value_(std::exchange(other.value_, std::nullopt)) {}
  future& operator=(future&& other) noexcept {
    if (this != &other) {
      abandon();
      group_ = std::move(other.group_);
      storage_ = std::move(other.storage_);
      result_ = std::exchange(other.result_, nullptr);
      done_ = std::move(other.done_);
      value_ = std::exchange(other.value_, std::nullopt);
    }
    return *this;
  }
  future(const future&) = delete;
  future& operator=(const future&) = delete;
  /// Waits for pending work: the result memory must not be reused under a running kernel.
  ~future() { abandon(); }

  bool valid() const noexcept { return value_.has_value() || static_cast<bool>(done_); }
  /// True once get() would not block.
  bool ready() const { return value_.has_value() || (done_ && done_.ready()); }
  void wait() {
    if (value_ || !done_) return;
    done_.synchronize();
    value_ = *result_;
    release();
  }
  /// Waits and returns the value; the future is then no longer valid.
  T get() {
    if (!valid()) throw std::logic_error("multigpu::future::get: the future has no value (already taken?)");
    wait();
    T value = *value_;
    value_.reset();
    return value;
  }

 private:
  void release() noexcept {
    done_.reset();
    storage_ = staging_pool::lease();
    result_ = nullptr;
  }
  void abandon() noexcept {
    if (done_) {
      try {
        done_.synchronize();
      } catch (...) {
      }
    }
    release();
  }

  std::optional<device_group> group_;  // keeps the pools alive while the result is pending
  staging_pool::lease storage_;
  const T* result_ = nullptr;
  event_pool::handle done_;
  std::optional<T> value_;
};

}  // namespace multigpu
