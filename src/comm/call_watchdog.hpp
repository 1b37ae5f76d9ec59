#pragma once
// The watchdog behind a communicator's timeout, for every transport that blocks (MPI, NCCL):
// private to the communicators' sources.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

namespace multigpu::detail {

/// Watches the blocking wait in flight, and escalates in two steps. The calling thread marks
/// a wait begun (its call's name and timeout) and ended, with a few atomic stores and no lock.
/// The watchdog's thread looks eight times per timeout (between 1 ms and 1 s apart; a wait
/// with a shorter limit than the last wakes it at once) and, while a wait is in flight:
/// 1. hands the transport's `act` the call's name, how long the wait has run and its limit.
///    `act` may poll (NCCL's asynchronous errors) and, when the wait is past its limit or
///    cannot end, does what ends it (revokes or aborts the communicator) and returns true;
/// 2. once `act` has acted, a wait still in flight one more timeout later calls `give_up`
///    (the transport's last words: a message, MPI_Abort) and ends the process.
/// A wait is timed from the first look that finds it, so a look sees it past its limit between
/// one and one and a quarter timeouts after it began; no clock is read on the calling thread.
/// A look never acts on a wait that has ended: end() waits for a look already under way on its
/// wait to finish, so what `act` wrote is the caller's to read once end() returns.
class call_watchdog {
 public:
  using clock = std::chrono::steady_clock;
  using act_fn = std::function<bool(const char* call, clock::duration waited, clock::duration limit)>;
  using give_up_fn = std::function<void(const char* call, clock::duration waited)>;

  call_watchdog(act_fn act, give_up_fn give_up)
      : act_(std::move(act)), give_up_(std::move(give_up)), thread_([this] { run(); }) {}
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
  /// ever, in effect). One wait at a time: the communicator's calls do not overlap.
  void begin(const char* call, double timeout_s) {
    const auto limit =
        std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(std::min(timeout_s, 1e9)));
    call_.store(call, std::memory_order_relaxed);
    limit_.store(limit.count(), std::memory_order_relaxed);
    in_flight_.store(++calls_, std::memory_order_seq_cst);  // publishes the two above
    if (period_of(limit).count() >= period_.load(std::memory_order_relaxed)) return;
    // A limit shorter than the one the thread sleeps for: wake it, so that it looks at this
    // wait on this limit's schedule (rare: the usual call keeps its limit and wakes nobody).
    {
      std::lock_guard lock(mutex_);
      sooner_ = true;
    }
    wake_.notify_one();
  }
  /// The wait ended. Returns once no look is acting on it.
  void end() {
    const std::uint64_t ended = in_flight_.load(std::memory_order_relaxed);
    in_flight_.store(0, std::memory_order_seq_cst);
    while (looking_.load(std::memory_order_seq_cst) == ended) std::this_thread::yield();
  }

 private:
  void run() {
    std::uint64_t seen = 0;  // the wait in flight at the last look (0: none)
    clock::time_point seen_at{};
    bool acted = false;  // act() acted on `seen`
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();  // begin() and end() never wait for a look
      look(seen, seen_at, acted);
      lock.lock();
      sooner_ = false;
      const clock::duration period = period_of(clock::duration(limit_.load(std::memory_order_relaxed)));
      period_.store(period.count(), std::memory_order_relaxed);
      wake_.wait_for(lock, period, [&] { return stop_ || sooner_; });
    }
  }

  void look(std::uint64_t& seen, clock::time_point& seen_at, bool& acted) {
    const std::uint64_t now_in_flight = in_flight_.load(std::memory_order_seq_cst);
    if (now_in_flight != seen) {
      seen = now_in_flight;
      seen_at = clock::now();
      acted = false;
    }
    if (seen == 0) return;
    // Claim the wait, then check that it is still in flight: either end() sees the claim and
    // waits for this look, or this look sees the wait ended and leaves it alone.
    looking_.store(seen, std::memory_order_seq_cst);
    if (in_flight_.load(std::memory_order_seq_cst) == seen) {
      const char* call = call_.load(std::memory_order_relaxed);
      const clock::duration limit(limit_.load(std::memory_order_relaxed));
      const clock::duration waited = clock::now() - seen_at;
      if (!acted) {
        if (act_(call, waited, limit)) {
          acted = true;
          seen_at = clock::now();  // the wait gets one more timeout to end
        }
      } else if (waited > limit) {
        give_up_(call, waited);
        std::abort();  // the launcher ends the job
      }
    }
    looking_.store(0, std::memory_order_seq_cst);
  }

  static clock::duration period_of(clock::duration limit) {
    return std::clamp<clock::duration>(limit / 8, std::chrono::milliseconds(1), std::chrono::seconds(1));
  }

  act_fn act_;
  give_up_fn give_up_;
  // The wait in flight, written by the calling thread.
  std::atomic<const char*> call_{""};
  std::atomic<clock::rep> limit_{std::chrono::duration_cast<clock::duration>(std::chrono::seconds(1)).count()};
  std::uint64_t calls_ = 0;                 // waits begun so far (the calling thread's)
  std::atomic<std::uint64_t> in_flight_{0};  // the number of the wait in flight, or 0
  std::atomic<std::uint64_t> looking_{0};    // the wait a look is acting on, or 0
  // The watchdog's thread: how long it sleeps between looks, and what wakes it.
  std::atomic<clock::rep> period_{std::chrono::duration_cast<clock::duration>(std::chrono::seconds(1)).count()};
  std::mutex mutex_;
  std::condition_variable wake_;
  bool sooner_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: it starts once the members above exist
};

}  // namespace multigpu::detail
