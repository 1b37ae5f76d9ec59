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
///    cannot end, starts what ends it (revokes or aborts the communicator) and returns true.
///    It must return promptly: an action that may block runs on a thread of its own;
/// 2. once `act` has acted, a wait still in flight one more timeout later calls `give_up`
///    (the transport's last words: a message, MPI_Abort) with how long the wait has run, and
///    ends the process.
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
    // limit_ then period_, against the thread's period_ then limit_ (run()): one of the two
    // sees the other's store, so a shorter limit never waits for a long sleep.
    limit_.store(limit.count(), std::memory_order_seq_cst);
    in_flight_.store(++calls_, std::memory_order_seq_cst);  // publishes the call too
    if (period_of(limit).count() >= period_.load(std::memory_order_seq_cst)) return;
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
    for (std::uint64_t l = looking_.load(std::memory_order_seq_cst); l == ended; l = looking_.load(std::memory_order_seq_cst))
      looking_.wait(l, std::memory_order_seq_cst);
  }

 private:
  struct watched {
    std::uint64_t wait = 0;          // the wait in flight at the last look (0: none)
    clock::time_point first_seen{};  // when a look first found it
    clock::time_point since{};       // its clock: first_seen, or when act() acted
    bool acted = false;              // act() acted on it
  };

  void run() {
    watched w;
    std::unique_lock lock(mutex_);
    while (!stop_) {
      lock.unlock();  // begin() and end() never wait for a look
      look(w);
      lock.lock();
      sooner_ = false;
      const clock::duration period = period_of(clock::duration(limit_.load(std::memory_order_seq_cst)));
      period_.store(period.count(), std::memory_order_seq_cst);
      wake_.wait_for(lock, period, [&] {
        return stop_ || sooner_ || period_of(clock::duration(limit_.load(std::memory_order_seq_cst))) < period;
      });
    }
  }

  void look(watched& w) {
    const std::uint64_t now_in_flight = in_flight_.load(std::memory_order_seq_cst);
    if (now_in_flight != w.wait) w = {now_in_flight, clock::now(), clock::now(), false};
    if (w.wait == 0) return;
    // Claim the wait, then check that it is still in flight: either end() sees the claim and
    // waits for this look, or this look sees the wait ended and leaves it alone.
    looking_.store(w.wait, std::memory_order_seq_cst);
    if (in_flight_.load(std::memory_order_seq_cst) == w.wait) {
      const char* call = call_.load(std::memory_order_relaxed);
      const clock::duration limit(limit_.load(std::memory_order_relaxed));
      const clock::time_point now = clock::now();
      if (!w.acted) {
        // act() must not block for long (a transport whose action may block runs it on a
        // thread of its own): the wait's second timeout runs from here.
        if (act_(call, now - w.since, limit)) {
          w.acted = true;
          w.since = now;
        }
      } else if (now - w.since > limit) {
        give_up_(call, now - w.first_seen);
        std::abort();  // the launcher ends the job
      }
    }
    looking_.store(0, std::memory_order_seq_cst);
    looking_.notify_all();
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
