#pragma once

#include <atomic>

namespace trpc::fiber::detail {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// A test-and-test-and-set spinlock for critical sections of a few instructions (wait lists).
/// Never held across a context switch by a running fiber: Halt() releases it on the scheduler's
/// stack after the fiber's context is saved.
///
/// Memory ordering: lock() is an acquire RMW, unlock() a release store, so a critical section
/// happens-before the next one on the same lock.
class Spinlock {
 public:
  void lock() {
    for (;;) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) CpuRelax();
    }
  }
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace trpc::fiber::detail
