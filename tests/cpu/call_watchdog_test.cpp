// The watchdog both blocking communicators share (src/comm/call_watchdog.hpp): it looks at a
// wait in flight only, times it from its first look, gives a wait it acted on one more timeout
// and then ends the process, and never acts on a wait that has ended: end() waits for a look
// under way.

#include "call_watchdog.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <chrono>
#include <string>
#include <thread>

namespace {

using namespace std::chrono_literals;
using multigpu::detail::call_watchdog;

void never_gives_up(const char* call, call_watchdog::clock::duration) {
  ADD_FAILURE() << "gave up on " << call;
}

TEST(CallWatchdog, LooksOnlyDuringAWaitAndSeesItPastItsLimit) {
  std::atomic<int> looks{0}, late{0};
  std::atomic<const char*> named{nullptr};
  call_watchdog dog([&](const char* call, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    ++looks;
    named = call;
    if (waited > limit) ++late;
    return false;
  }, never_gives_up);
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
  }, never_gives_up);
  for (int i = 0; i < 20; ++i) {
    dog.begin("barrier", 10.0);
    std::this_thread::sleep_for(2ms);
    dog.end();
  }
  EXPECT_EQ(late.load(), 0);
}

TEST(CallWatchdog, AWaitThatEndsAfterTheActionIsNotGivenUp) {
  std::atomic<int> acted{0}, gave_up{0};
  call_watchdog dog(
      [&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
        if (waited <= limit) return false;
        ++acted;
        return true;  // it aborted the communicator: the wait gets one more timeout to end
      },
      [&](const char*, call_watchdog::clock::duration) { ++gave_up; });
  // A limit long enough that the end() below comes well within the second timeout, however
  // loaded the machine: giving up would end this test binary.
  dog.begin("send_recv", 0.5);
  const auto start = std::chrono::steady_clock::now();
  while (acted.load() == 0 && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(1ms);
  dog.end();  // the action ended the wait
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(700ms);  // past the second timeout
  EXPECT_EQ(acted.load(), 1) << "the transport acts once on a wait";
  EXPECT_EQ(gave_up.load(), 0);
  EXPECT_GE(elapsed, 0.5) << "the action comes a whole limit after the wait began";
}

TEST(CallWatchdog, AWaitStillStuckOneTimeoutAfterTheActionEndsTheProcess) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        call_watchdog dog(
            [](const char* call, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
              if (waited <= limit) return false;
              std::fprintf(stderr, "acted on %s\n", call);
              return true;
            },
            [](const char* call, call_watchdog::clock::duration waited) {
              std::fprintf(stderr, "gave up on %s after %.2f s\n", call, std::chrono::duration<double>(waited).count());
            });
        dog.begin("all_to_all_v", 0.05);
        std::this_thread::sleep_for(10s);  // stuck: neither the action nor anything else ends it
      },
      "acted on all_to_all_v(.|\n)*gave up on all_to_all_v");
}

TEST(CallWatchdog, EndWaitsForALookActingOnItsWait) {
  std::atomic<bool> acting{false}, acted{false};
  call_watchdog dog(
      [&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
        if (waited <= limit || acted.load()) return false;
        acting = true;
        std::this_thread::sleep_for(50ms);  // an abort that takes a while
        acted = true;
        return false;
      },
      never_gives_up);
  dog.begin("broadcast", 0.01);
  const auto start = std::chrono::steady_clock::now();
  while (!acting.load() && std::chrono::steady_clock::now() - start < 10s) std::this_thread::sleep_for(100us);
  ASSERT_TRUE(acting.load());
  dog.end();
  EXPECT_TRUE(acted.load()) << "end() returned while a look was still acting on its wait";
}

TEST(CallWatchdog, AShorterLimitThanTheLastIsWatchedOnItsOwnSchedule) {
  std::atomic<int> late{0};
  call_watchdog dog([&](const char*, call_watchdog::clock::duration waited, call_watchdog::clock::duration limit) {
    if (waited > limit) ++late;
    return false;
  }, never_gives_up);
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
