#pragma once

#include <atomic>
#include <thread>

#include "trpc/fiber/detail/fiber_entity.h"
#include "trpc/fiber/detail/spinlock.h"

namespace trpc::fiber::detail {

/// Waits for `flag` to become true when it is known to be about to: the few instructions
/// between a waker releasing a primitive's spinlock and publishing its final state. Spins
/// briefly, then yields (the waker may have been preempted), so it cannot stall a worker.
inline void AwaitImminent(const std::atomic<bool>& flag) {
  for (int i = 0; !flag.load(std::memory_order_acquire); ++i) {
    if (i < 64) {
      CpuRelax();
    } else if (CurrentFiber() != nullptr) {
      YieldCurrent();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace trpc::fiber::detail
