#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace trpc::fiber::detail {

/// Blocks while `*word == expected`, at most until `deadline_ns` (CLOCK_MONOTONIC, absolute;
/// < 0 = no limit). Returns early on a wake, a signal or a spurious wake-up: callers re-check
/// their condition. Process-private futex.
inline void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, int64_t deadline_ns) {
  timespec ts;
  timespec* tsp = nullptr;
  if (deadline_ns >= 0) {
    ts.tv_sec = deadline_ns / 1'000'000'000;
    ts.tv_nsec = deadline_ns % 1'000'000'000;
    tsp = &ts;
  }
  // FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline (plain FUTEX_WAIT is relative).
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_BITSET_PRIVATE, expected, tsp,
            nullptr, FUTEX_BITSET_MATCH_ANY);
}

/// Wakes up to `n` threads blocked in FutexWait on `word`.
inline void FutexWake(std::atomic<uint32_t>* word, int n) {
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, n, nullptr, nullptr,
            0);
}

}  // namespace trpc::fiber::detail
