#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace trpc::detail {

/// A recent-latency quantile for hedging's "observed P95": a log-scale histogram (4 buckets per
/// power of two of microseconds, 1 µs .. ~70 s) over the current and the previous window of
/// `window_ns`, so old samples age out within two windows.
///
/// Thread contract: Add and Quantile from any thread. Counters are relaxed atomics: the quantile
/// steers a delay, and a sample lost or counted in the neighbouring window changes nothing that
/// matters. Rotation is claimed by one thread with a CAS on the window start.
class LatencyWindow {
 public:
  explicit LatencyWindow(int64_t window_ns = 1'000'000'000) : window_ns_(window_ns) {}

  void Add(int64_t now_ns, int64_t latency_ns);
  /// The `q` quantile (0 < q < 1) in ns over the last one to two windows; `fallback` when there
  /// are fewer than `min_samples` samples.
  int64_t Quantile(int64_t now_ns, double q, int64_t fallback, uint64_t min_samples = 20);

 private:
  static constexpr int kBuckets = 4 * 27;
  static int BucketOf(int64_t latency_ns);
  static int64_t UpperBoundNs(int bucket);
  void MaybeRotate(int64_t now_ns);

  const int64_t window_ns_;
  std::atomic<int64_t> window_start_{0};
  std::atomic<int> current_{0};
  std::array<std::array<std::atomic<uint64_t>, kBuckets>, 2> counts_{};
};

}  // namespace trpc::detail
