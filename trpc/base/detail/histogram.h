#pragma once

#include <cstdint>
#include <vector>

namespace trpc {

/// A latency histogram with HDR-style buckets: every value from 1 to 2^26 units (about 67 s in
/// microseconds) is kept to 3 significant digits (relative error < 0.1%) in a fixed 136 KiB
/// array, so recording is a few instructions and never allocates. Larger values are clamped.
///
/// Layout: bucket 0 holds values 0..2047 exactly; bucket b >= 1 holds [2^(b+10), 2^(b+11)) in
/// 1024 sub-buckets of width 2^b. Index = b * 1024 + (value >> b).
///
/// Thread contract: one writer; merge per-thread histograms at the end (Merge).
class Histogram {
 public:
  static constexpr int kSubBucketBits = 11;
  static constexpr int64_t kMaxValue = (int64_t{1} << 26) - 1;

  Histogram();

  void Record(int64_t value) { RecordN(value, 1); }
  void RecordN(int64_t value, uint64_t n);
  void Merge(const Histogram& other);
  void Reset();

  uint64_t Count() const { return count_; }
  int64_t Min() const { return count_ ? min_ : 0; }
  int64_t Max() const { return max_; }
  double Mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  /// The smallest recorded value v such that `percentile`% of values are <= v (to 3 digits).
  int64_t ValueAtPercentile(double percentile) const;

 private:
  static int IndexOf(int64_t value);
  static int64_t HighestEquivalent(int index);

  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  int64_t sum_ = 0;
  int64_t min_ = INT64_MAX;
  int64_t max_ = 0;
};

}  // namespace trpc
