#include "trpc/client/detail/overload_throttle.h"

#include <algorithm>

namespace trpc::detail {

namespace {
// A per-thread xorshift64: a refusal decision needs a cheap number in [0, 1), not a good one.
double NextUnit() {
  thread_local uint64_t state =
      0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&state);  // distinct per thread
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<double>(state >> 11) * (1.0 / 9007199254740992.0);
}
}  // namespace

OverloadThrottle::Bucket& OverloadThrottle::Current(int64_t now_ns) {
  int64_t period = now_ns / kBucketNs;
  Bucket& b = buckets_[static_cast<size_t>(period) % kBuckets];
  int64_t seen = b.period.load(std::memory_order_relaxed);
  if (seen != period && b.period.compare_exchange_strong(seen, period, std::memory_order_relaxed)) {
    b.requests.store(0, std::memory_order_relaxed);
    b.accepts.store(0, std::memory_order_relaxed);
  }
  return b;
}

void OverloadThrottle::Sum(int64_t now_ns, uint64_t* requests, uint64_t* accepts) {
  int64_t period = now_ns / kBucketNs;
  *requests = *accepts = 0;
  for (Bucket& b : buckets_) {
    int64_t p = b.period.load(std::memory_order_relaxed);
    if (p > period - static_cast<int64_t>(kBuckets) && p <= period) {
      *requests += b.requests.load(std::memory_order_relaxed);
      *accepts += b.accepts.load(std::memory_order_relaxed);
    }
  }
}

double OverloadThrottle::RefuseProbability(int64_t now_ns) {
  uint64_t requests, accepts;
  Sum(now_ns, &requests, &accepts);
  double excess = static_cast<double>(requests) - kAcceptsMultiplier * static_cast<double>(accepts);
  return std::clamp(excess / (static_cast<double>(requests) + 1.0), 0.0, kMaxRefuseProbability);
}

bool OverloadThrottle::ShouldRefuse(int64_t now_ns) {
  double p = RefuseProbability(now_ns);
  Current(now_ns).requests.fetch_add(1, std::memory_order_relaxed);
  return p > 0 && NextUnit() < p;
}

void OverloadThrottle::OnResult(int64_t now_ns, bool accepted) {
  if (accepted) Current(now_ns).accepts.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace trpc::detail
