#pragma once
// A kernel that holds a stream until the host opens a gate in mapped pinned memory: work
// queued behind it shows whether a call returned without waiting for the device.

namespace {  // one copy per test program: the kernel is defined in each translation unit

/// Spins until *gate is non-zero; after `timeout_cycles` gives up and sets *timed_out.
__global__ void wait_for_gate(const volatile int* gate, long long timeout_cycles, volatile int* timed_out) {
  const long long start = clock64();
  while (*gate == 0) {
    if (clock64() - start > timeout_cycles) {
      *timed_out = 1;
      return;
    }
    __nanosleep(1000);
  }
}

/// About 10 s at a 2 GHz clock: far above a test's own waits, far below ctest's timeout.
constexpr long long gate_timeout_cycles = 20'000'000'000LL;

}  // namespace
