#pragma once
// The watchdog behind a communicator's timeout, for every transport that blocks (MPI, NCCL):
// private to the communicators' sources.

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace multigpu::detail {

/// Watches the blocking wait in flight. The calling thread marks a wait begun (its call's name
/// and timeout) and ended; the watchdog's thread looks eight times per timeout (between 1 ms
/// and 1 s apart; a wait with a shorter limit than the last wakes it at once) and, while a wait is in flight, hands the transport's `look` the call's
/// name, how long the wait has run and its limit. A wait is timed from the first look that
/// finds it, so a look sees it past its limit between one and one and a quarter timeouts after
/// it began; no clock is read on the calling thread.
/// `look` runs with the watchdog's lock held, which begin() and end() take too: it never acts
/// on a wait that has ended, and once end() returns no look touches that wait again. It
/// returns true to time the same wait afresh (it acted, and the wait gets one more timeout).
class call_watchdog {
 public:
  using clock = std::chrono::steady_clock;
  using look_fn = std::function<bool(const char* call, clock::duration waited, clock::duration limit)>;

  explicit call_watchdog(look_fn look) : look_(std::move(look)), thread_([this] { run(); }) {}
  ~call_watchdog() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  call_watchdog(const call_watchdog&) = delete;
  call_watchdog& operator=(const call_watchdog&) = delete;

  /// A wait for `call` starts now, with a limit of `timeout_s` seconds (over 30 years: for
  /// ever, in effect).
  void begin(const char* call, double timeout_s) {
    bool sooner = false;
    {
      std::lock_guard lock(mutex_);
      call_ = call;
      limit_ = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(std::min(timeout_s, 1e9)));
      in_flight_ = ++calls_;
      sooner = period_of(limit_) < period_;
    }
    // A limit shorter than the one the thread sleeps for: wake it, so that it looks at this
    // wait on this limit's schedule (rare: the usual call keeps its limit and wakes nobody).
    if (sooner) wake_.notify_one();
  }
  /// The wait ended.
  void end() {
    std::lock_guard lock(mutex_);
    in_flight_ = 0;
  }

 private:
  void run() {
    std::unique_lock lock(mutex_);
    std::uint64_t seen = 0;  // the wait in flight at the last look (0: none)
    clock::time_point seen_at{};
    while (!stop_) {
      if (in_flight_ != seen) {
        seen = in_flight_;
        seen_at = clock::now();
      }
      if (seen != 0 && look_(call_, clock::now() - seen_at, limit_)) seen_at = clock::now();
      period_ = period_of(limit_);
      const std::uint64_t looked_at = calls_;
      wake_.wait_for(lock, period_, [&] { return stop_ || (calls_ != looked_at && period_of(limit_) < period_); });
    }
  }

  static clock::duration period_of(clock::duration limit) {
    return std::clamp<clock::duration>(limit / 8, std::chrono::milliseconds(1), std::chrono::seconds(1));
  }

  look_fn look_;
  std::mutex mutex_;
  std::condition_variable wake_;
  const char* call_ = "";
  clock::duration limit_ = std::chrono::seconds(1);
  std::uint64_t calls_ = 0;      // waits begun so far
  std::uint64_t in_flight_ = 0;  // the number of the wait in flight, or 0
  clock::duration period_ = std::chrono::seconds(1);  // how long the thread sleeps between looks
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace multigpu::detail
