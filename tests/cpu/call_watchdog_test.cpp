// The watchdog both blocking communicators share (src/comm/call_watchdog.hpp): it looks at a
// wait in flight only, times it from its first look, lets a look restart the clock, and never
// looks at a wait that has ended.

#include "call_watchdog.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using multigpu::detail::call_watchdog;

TEST(CallWatchdog, LooksOnlyDuringAWaitAndSeesItPastItsLimit) {
  std::atomic<int> looks{0}, late{0};
  std::atomic<const char*> named{nullptr};
  call_watchdog dog([&](const char* call, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    ++looks;
    named = call;
    if (waited > limit) ++late;
    return false;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(looks.load(), 0) << "no wait in flight: no look";
  dog.begin("all_reduce", 0.04);  // looks every 5 ms
  const auto start = std::chrono::steady_clock::now();
  while (late.load() == 0 && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
  dog.end();
  const int seen = looks.load();
  EXPECT_GE(late.load(), 1) << "a wait past its limit is seen late";
  EXPECT_GE(seen, 2) << "looked before the limit too";
  EXPECT_EQ(std::string(named.load()), "all_reduce");
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(looks.load(), seen) << "no look after end()";
}

TEST(CallWatchdog, AWaitWithinItsLimitIsNeverLate) {
  std::atomic<int> late{0};
  call_watchdog dog([&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    if (waited > limit) ++late;
    return false;
  });
  for (int i = 0; i < 20; ++i) {
    dog.begin("barrier", 10.0);
    std::this_thread::sleep_for(2ms);
    dog.end();
  }
  EXPECT_EQ(late.load(), 0);
}

TEST(CallWatchdog, ALookThatActsGetsOneMoreTimeout) {
  std::atomic<int> acted{0};
  call_watchdog dog([&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    if (waited <= limit) return false;
    ++acted;
    return true;  // timed afresh
  });
  dog.begin("send_recv", 0.05);
  const auto start = std::chrono::steady_clock::now();
  while (acted.load() < 2 && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
  dog.end();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(acted.load(), 2);
  // Each act comes a whole limit after the clock (re)started: two take two limits at least.
  EXPECT_GE(elapsed, 0.1);
}

TEST(CallWatchdog, AShorterLimitThanTheLastIsWatchedOnItsOwnSchedule) {
  std::atomic<int> late{0};
  call_watchdog dog([&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    if (waited > limit) ++late;
    return false;
  });
  dog.begin("all_gather", 100.0);  // the thread now sleeps 1 s between looks
  std::this_thread::sleep_for(20ms);
  dog.end();
  std::this_thread::sleep_for(20ms);
  const auto start = std::chrono::steady_clock::now();
  dog.begin("barrier", 0.02);  // looks every 2.5 ms: seen late after about 20-25 ms, not 1 s
  while (late.load() == 0 && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
  dog.end();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(late.load(), 1);
  EXPECT_LT(seconds, 0.9) << "the short wait waited for the long one's sleep";
}

}  // namespace
