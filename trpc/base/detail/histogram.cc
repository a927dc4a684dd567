#include "trpc/base/detail/histogram.h"

#include <algorithm>
#include <cmath>

namespace trpc {

namespace {
constexpr int kHalf = 1 << (Histogram::kSubBucketBits - 1);   // 1024
constexpr int kBuckets = 26 - Histogram::kSubBucketBits + 1;  // 16
constexpr int kCounts = kBuckets * kHalf + kHalf;             // 17408
}  // namespace

Histogram::Histogram() : counts_(kCounts, 0) {}

int Histogram::IndexOf(int64_t v) {
  uint64_t u = static_cast<uint64_t>(v);
  int bucket = 63 - __builtin_clzll(u | ((1u << Histogram::kSubBucketBits) - 1)) -
               (Histogram::kSubBucketBits - 1);
  return bucket * kHalf + static_cast<int>(u >> bucket);
}

int64_t Histogram::HighestEquivalent(int index) {
  int bucket = index < 2 * kHalf ? 0 : (index >> (kSubBucketBits - 1)) - 1;
  int64_t sub = index - bucket * kHalf;
  return ((sub + 1) << bucket) - 1;
}

void Histogram::RecordN(int64_t value, uint64_t n) {
  value = std::clamp<int64_t>(value, 0, kMaxValue);
  counts_[IndexOf(value)] += n;
  count_ += n;
  sum_ += value * static_cast<int64_t>(n);
  min_ = std::min(min_, value);
  max_ = std::max(max_, value);
}

void Histogram::Merge(const Histogram& other) {
  for (int i = 0; i < kCounts; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

void Histogram::Reset() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = 0;
  sum_ = 0;
  min_ = INT64_MAX;
  max_ = 0;
}

int64_t Histogram::ValueAtPercentile(double percentile) const {
  if (count_ == 0) return 0;
  percentile = std::clamp(percentile, 0.0, 100.0);
  uint64_t target =
      std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(percentile / 100.0 * count_)));
  uint64_t seen = 0;
  for (int i = 0; i < kCounts; ++i) {
    seen += counts_[i];
    if (seen >= target) return std::min(HighestEquivalent(i), max_);
  }
  return max_;
}

}  // namespace trpc
