#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "trpc/fiber/detail/context.h"  // TRPC_FIBER_TSAN
#include "trpc/fiber/detail/scheduler.h"

namespace trpc::fiber::testing {

/// Stress-test sizes under TSan: it makes each switch and atomic ~50-100x dearer, and a tenth
/// of the count still drives every path (run-queue overflow, stealing, parking) it must see.
constexpr int ScaledForSanitizer(int n) {
#ifdef TRPC_FIBER_TSAN
  return n / 10;
#else
  return n;
#endif
}

/// A fixture owning one scheduler, stopped at the end of the test.
class FiberTest : public ::testing::Test {
 protected:
  void Start(size_t workers) {
    SchedulerOptions o;
    o.name = "test";
    o.concurrency = workers;
    o.fiber_stack_size = 64 * 1024;
    sched_ = std::make_unique<Scheduler>(o);
    std::string err;
    ASSERT_TRUE(sched_->Start(&err)) << err;
  }
  void TearDown() override {
    if (sched_) sched_->Stop();
  }
  std::unique_ptr<Scheduler> sched_;
};

/// Polls `pred` from a plain thread until it holds or `limit` passes; returns its last value.
/// For tests that must wait for another party to reach a state (never for ordering by sleep).
inline bool PollFor(const std::function<bool()>& pred,
                    std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

}  // namespace trpc::fiber::testing
