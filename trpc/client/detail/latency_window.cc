#include "trpc/client/detail/latency_window.h"

#include <bit>

namespace trpc::detail {

int LatencyWindow::BucketOf(int64_t latency_ns) {
  uint64_t us = latency_ns <= 1000 ? 1 : static_cast<uint64_t>(latency_ns / 1000);
  int log = 63 - std::countl_zero(us);  // floor(log2(us))
  // The two bits below the top one split each power of two in four.
  int sub =
      log >= 2 ? static_cast<int>((us >> (log - 2)) & 3) : static_cast<int>((us << (2 - log)) & 3);
  int b = log * 4 + sub;
  return b < kBuckets ? b : kBuckets - 1;
}

int64_t LatencyWindow::UpperBoundNs(int bucket) {
  int log = bucket / 4;
  int sub = bucket % 4;
  // The bucket holds [2^log * (4 + sub) / 4, 2^log * (5 + sub) / 4) µs.
  int64_t upper_us = (int64_t{1} << log) * (5 + sub) / 4;
  return (upper_us > 0 ? upper_us : 1) * 1000;
}

void LatencyWindow::MaybeRotate(int64_t now_ns) {
  int64_t start = window_start_.load(std::memory_order_relaxed);
  if (now_ns - start < window_ns_) return;
  if (!window_start_.compare_exchange_strong(start, now_ns, std::memory_order_relaxed)) return;
  // The winner empties the older window and makes it current.
  int next = 1 - current_.load(std::memory_order_relaxed);
  // Long idle: both windows are stale.
  if (now_ns - start >= 2 * window_ns_) {
    for (auto& c : counts_[1 - next]) c.store(0, std::memory_order_relaxed);
  }
  for (auto& c : counts_[next]) c.store(0, std::memory_order_relaxed);
  current_.store(next, std::memory_order_relaxed);
}

void LatencyWindow::Add(int64_t now_ns, int64_t latency_ns) {
  MaybeRotate(now_ns);
  counts_[current_.load(std::memory_order_relaxed)][BucketOf(latency_ns)].fetch_add(
      1, std::memory_order_relaxed);
}

int64_t LatencyWindow::Quantile(int64_t now_ns, double q, int64_t fallback, uint64_t min_samples) {
  MaybeRotate(now_ns);
  std::array<uint64_t, kBuckets> sum{};
  uint64_t total = 0;
  for (int w = 0; w < 2; ++w) {
    for (int b = 0; b < kBuckets; ++b) {
      uint64_t c = counts_[w][b].load(std::memory_order_relaxed);
      sum[b] += c;
      total += c;
    }
  }
  if (total < min_samples || total == 0) return fallback;
  auto rank = static_cast<uint64_t>(q * static_cast<double>(total));
  uint64_t seen = 0;
  for (int b = 0; b < kBuckets; ++b) {
    seen += sum[b];
    if (seen > rank) return UpperBoundNs(b);
  }
  return UpperBoundNs(kBuckets - 1);
}

}  // namespace trpc::detail
