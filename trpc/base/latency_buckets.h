#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace trpc {

/// Upper bounds (ns, inclusive: Prometheus `le`) of the fixed buckets of every per-method latency
/// histogram, server and client alike, 50 us to 10 s in 1-2.5-5 steps; a last bucket takes what
/// is above 10 s.
inline constexpr std::array<int64_t, 17> kLatencyBucketBoundsNs = {
    50'000,      100'000,       250'000,       500'000,       1'000'000,     2'500'000,
    5'000'000,   10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000,
    500'000'000, 1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
inline constexpr size_t kLatencyBuckets = kLatencyBucketBoundsNs.size() + 1;

}  // namespace trpc
