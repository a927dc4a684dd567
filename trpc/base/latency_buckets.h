#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace trpc {

/// Upper bounds (ns, inclusive: Prometheus `le`) of the fixed buckets of every per-method latency
/// histogram, server and client alike, 50 us to 10 s in 1-2.5-5 steps; a last bucket takes what
/// is above 10 s.
inline constexpr std::array<int64_t, 17> kLatencyBucketBoundsNs = {
    50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
    5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr size_t kLatencyBuckets = kLatencyBucketBoundsNs.size() + 1;

/// A histogram's numbers in a scrape: non-cumulative counts per bucket of
/// kLatencyBucketBoundsNs (the last one for what is above the last bound) and the sum.
struct LatencySnapshot {
  std::array<uint64_t, kLatencyBuckets> buckets{};
  uint64_t sum_ns = 0;
  uint64_t count = 0;
};

/// The largest number of status codes a protocol's own metrics tell apart (gRPC's 0..16).
inline constexpr size_t kWireStatuses = 17;
/// A histogram per wire status seen (status, its numbers), in status order.
using LatencyByWireStatus = std::vector<std::pair<int, LatencySnapshot>>;

}  // namespace trpc
