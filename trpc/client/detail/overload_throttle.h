#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace trpc::detail {

/// A client-side adaptive throttle for one callee (`overload_throttle: true`), after the
/// client-side throttling of Google's SRE book: over the last two seconds, with `requests` the
/// calls the caller attempted and `accepts` the calls the callee accepted (answered with
/// anything but "overloaded", ret 22), a new call is refused locally with probability
///
///     min(0.95, max(0, (requests - 2 * accepts) / (requests + 1))).
///
/// While the callee accepts at least half of what is asked, nothing is refused; beyond that,
/// callers stop sending what the callee would refuse anyway (they send about twice what it
/// accepts), so a fleet of clients does not multiply an overload with retries. Calls refused
/// locally count as requests; the cap lets at least 1 call in 20 through, so that a recovered
/// callee is noticed: what gets through is accepted, the excess shrinks by half about every
/// window, and refusals end a few seconds after the callee's recovery.
///
/// Memory ordering: the counters are relaxed atomics in 200 ms buckets of a ring; a bucket
/// whose period is over is reset by the first thread that sees it (a CAS on its period number).
/// Increments racing with a reset may be lost: the throttle is statistical and tolerates that.
/// Any thread.
class OverloadThrottle {
 public:
  /// True: refuse this call (it has been counted).
  bool ShouldRefuse(int64_t now_ns);
  /// A call that was not refused ended; `accepted` unless the callee said "overloaded" or the
  /// call timed out.
  void OnResult(int64_t now_ns, bool accepted);
  /// The refusal probability now (for tests and metrics).
  double RefuseProbability(int64_t now_ns);

 private:
  static constexpr int64_t kBucketNs = 200'000'000;
  static constexpr size_t kBuckets = 10;  // 2 s
  static constexpr double kAcceptsMultiplier = 2.0;
  static constexpr double kMaxRefuseProbability = 0.95;

  struct alignas(64) Bucket {
    std::atomic<int64_t> period{-1};
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> accepts{0};
  };
  Bucket& Current(int64_t now_ns);
  void Sum(int64_t now_ns, uint64_t* requests, uint64_t* accepts);

  std::array<Bucket, kBuckets> buckets_;
};

}  // namespace trpc::detail
