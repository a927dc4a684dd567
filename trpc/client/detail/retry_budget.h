#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace trpc::detail {

/// Bounds the extra attempts (retries and hedges) of one client service, so that they add at
/// most `percent` of its calls plus `min_per_second`: a callee in trouble sees at most that much
/// more load from us, however many calls fail.
///
/// Each first attempt earns percent/100 of a token; each extra attempt spends a whole one; on
/// top of that, min_per_second tokens are granted per second of time. Tokens are capped (at ten
/// seconds' minimum, and at least 10), so a quiet period cannot bank a burst; the budget starts
/// with one second's minimum.
///
/// Thread contract: any thread. Earning is one relaxed fetch_add (on every call with a policy);
/// spending, which only failing or slow calls do, takes a mutex to refill by time.
class RetryBudget {
 public:
  RetryBudget(uint32_t percent, uint32_t min_per_second)
      : earn_milli_(static_cast<int64_t>(percent) * 10),
        min_per_second_(min_per_second),
        cap_milli_(1000 * std::max<int64_t>(10, int64_t{10} * min_per_second)),
        milli_(int64_t{1000} * min_per_second) {}  // a first second's worth from the start

  void OnFirstAttempt() {
    if (milli_.load(std::memory_order_relaxed) < cap_milli_) {
      milli_.fetch_add(earn_milli_, std::memory_order_relaxed);
    }
  }
  /// True (and one token spent) when an extra attempt may go.
  bool TrySpend(int64_t now_ns) {
    std::lock_guard lock(mu_);
    if (last_refill_ns_ == 0) last_refill_ns_ = now_ns;
    // Clamped so that elapsed * min_per_second_ cannot overflow: past a full cap's worth of
    // time, more does not add anything.
    int64_t elapsed = std::min(now_ns - last_refill_ns_, int64_t{3600} * 1'000'000'000);
    if (min_per_second_ > 0 && elapsed > 0) {
      // Whole milli-tokens only; the remainder of the time carries over.
      int64_t grant = elapsed * min_per_second_ / 1'000'000;  // ns * tokens/s -> milli-tokens
      if (grant > 0) {
        last_refill_ns_ += grant * 1'000'000 / min_per_second_;
        int64_t have = milli_.load(std::memory_order_relaxed);
        if (have < cap_milli_) {
          milli_.fetch_add(std::min(grant, cap_milli_ - have), std::memory_order_relaxed);
        }
      }
    } else if (min_per_second_ == 0) {
      last_refill_ns_ = now_ns;
    }
    if (milli_.load(std::memory_order_relaxed) < 1000) return false;
    milli_.fetch_sub(1000, std::memory_order_relaxed);
    return true;
  }

 private:
  const int64_t earn_milli_;
  const int64_t min_per_second_;
  const int64_t cap_milli_;
  std::atomic<int64_t> milli_;
  std::mutex mu_;
  int64_t last_refill_ns_ = 0;  // under mu_
};

}  // namespace trpc::detail
