#include "trpc/server/detail/concurrency_limiter.h"

#include <algorithm>
#include <cmath>

#include "trpc/base/clock.h"

namespace trpc::detail {

namespace {
// A window closes after this long once it has kMinReplies replies, or after kMaxWindowNs.
constexpr int64_t kWindowNs = 100 * kNanosPerMilli;
constexpr int64_t kMaxWindowNs = 1000 * kNanosPerMilli;
constexpr uint64_t kMinReplies = 16;
// Queueing the adaptive limit always allows, whatever the no-load latency: below this, jitter
// (a scheduler tick, a burst of 20 requests in one pass) would look like overload.
constexpr int64_t kMinSlackNs = 250 * kNanosPerMicro;
// The adaptive limit's start: generous, since a window at 2x load halves it at most.
constexpr uint32_t kInitialAdaptiveLimit = 64;
constexpr double kMaxAdaptiveLimit = 1 << 20;
}  // namespace

ConcurrencyLimiter::ConcurrencyLimiter(uint32_t fixed_limit, bool adaptive, size_t reactors,
                                       bool inline_passes)
    : adaptive_(adaptive && fixed_limit == 0),
      inline_passes_(inline_passes),
      reactors_(reactors),
      limit_(adaptive_ ? kInitialAdaptiveLimit : fixed_limit) {
  limit_real_ = limit_.load(std::memory_order_relaxed);
  window_start_ns_ = MonotonicNanos();
  window_end_ns_.store(window_start_ns_ + kWindowNs, std::memory_order_relaxed);
}

void ConcurrencyLimiter::OnDone(size_t r, int64_t latency_ns, int64_t service_ns, int64_t now_ns) {
  in_flight_.fetch_sub(1, std::memory_order_relaxed);
  Reactor& s = reactors_[r];
  s.replies.fetch_add(1, std::memory_order_relaxed);
  s.latency_sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(latency_ns, 0)),
                             std::memory_order_relaxed);
  s.service_sum_ns.fetch_add(static_cast<uint64_t>(std::max<int64_t>(service_ns, 0)),
                             std::memory_order_relaxed);
  if (now_ns >= window_end_ns_.load(std::memory_order_relaxed)) Roll(now_ns);
}

void ConcurrencyLimiter::Roll(int64_t now_ns) {
  if (rolling_.exchange(true, std::memory_order_acquire)) return;  // another thread rolls
  uint64_t replies = 0;
  for (Reactor& s : reactors_) replies += s.replies.load(std::memory_order_relaxed);
  int64_t elapsed = now_ns - window_start_ns_;
  if (now_ns < window_end_ns_.load(std::memory_order_relaxed) ||
      (replies < kMinReplies && elapsed < kMaxWindowNs)) {
    // Rolled already, or too few replies yet to judge: look again a window later.
    if (now_ns >= window_end_ns_.load(std::memory_order_relaxed)) {
      window_end_ns_.store(now_ns + kWindowNs / 4, std::memory_order_relaxed);
    }
    rolling_.store(false, std::memory_order_release);
    return;
  }
  uint64_t latency_sum = 0, service_sum = 0, rejected = 0;
  uint32_t peak_demand = 0;
  replies = 0;
  for (Reactor& s : reactors_) {
    replies += s.replies.exchange(0, std::memory_order_relaxed);
    latency_sum += s.latency_sum_ns.exchange(0, std::memory_order_relaxed);
    service_sum += s.service_sum_ns.exchange(0, std::memory_order_relaxed);
    peak_demand = std::max(peak_demand, s.peak_demand.exchange(0, std::memory_order_relaxed));
    rejected += s.rejected.exchange(0, std::memory_order_relaxed);
  }
  window_start_ns_ = now_ns;
  window_end_ns_.store(now_ns + kWindowNs, std::memory_order_relaxed);
  if (replies > 0 && elapsed > 0) {
    qps_history_[history_next_] = static_cast<double>(replies) * 1e9 / static_cast<double>(elapsed);
    history_next_ = (history_next_ + 1) % kHistory;
    double peak_qps = *std::max_element(qps_history_, qps_history_ + kHistory);
    double service = static_cast<double>(service_sum) / static_cast<double>(replies);
    // Smoothed so that one window of unusual requests does not move the target much; a lasting
    // change is followed within a few windows.
    service_smoothed_ = service_smoothed_ == 0 ? service : 0.7 * service_smoothed_ + 0.3 * service;
    service_ns_.store(static_cast<int64_t>(service_smoothed_), std::memory_order_relaxed);
    if (adaptive_) {
      double avg = static_cast<double>(latency_sum) / static_cast<double>(replies);
      double target = service_smoothed_ + std::max(service_smoothed_, double{kMinSlackNs});
      // Little's law: what the server delivered, at its service time, needs this many in flight.
      double floor = std::max<double>(static_cast<double>(reactors_.size()),
                                      std::ceil(peak_qps * service_smoothed_ / 1e9));
      if (avg > target) {
        limit_real_ *= std::max(0.5, target / avg);
      } else if (rejected > 0 || peak_demand + 1 >= limit_.load(std::memory_order_relaxed)) {
        // Demand met the limit while latency was fine: the limit, not the server, was the cap.
        limit_real_ += std::max(1.0, std::sqrt(limit_real_));
      }
      limit_real_ = std::clamp(limit_real_, floor, kMaxAdaptiveLimit);
      limit_.store(static_cast<uint32_t>(limit_real_), std::memory_order_relaxed);
    }
  }
  rolling_.store(false, std::memory_order_release);
}

}  // namespace trpc::detail
