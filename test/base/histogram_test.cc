#include "trpc/base/detail/histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace trpc {
namespace {

TEST(HistogramTest, SmallValuesAreExact) {
  Histogram h;
  for (int v = 1; v <= 1000; ++v) h.Record(v);
  EXPECT_EQ(h.Count(), 1000u);
  EXPECT_EQ(h.Min(), 1);
  EXPECT_EQ(h.Max(), 1000);
  EXPECT_EQ(h.ValueAtPercentile(50), 500);
  EXPECT_EQ(h.ValueAtPercentile(99), 990);
  EXPECT_EQ(h.ValueAtPercentile(100), 1000);
  EXPECT_DOUBLE_EQ(h.Mean(), 500.5);
}

TEST(HistogramTest, PercentilesWithinThreeSignificantDigitsOfExact) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(8.0, 2.0);
  std::vector<int64_t> values;
  Histogram h;
  for (int i = 0; i < 200000; ++i) {
    int64_t v = std::min<int64_t>(Histogram::kMaxValue, 1 + static_cast<int64_t>(dist(rng)));
    values.push_back(v);
    h.Record(v);
  }
  std::sort(values.begin(), values.end());
  for (double p : {50.0, 90.0, 99.0, 99.9, 99.99}) {
    int64_t exact = values[static_cast<size_t>(std::ceil(p / 100 * values.size())) - 1];
    int64_t got = h.ValueAtPercentile(p);
    EXPECT_GE(got, exact) << p;
    EXPECT_LE(got, exact + exact / 1000 + 1) << p;
  }
}

TEST(HistogramTest, MergeEqualsRecordingEverythingInOne) {
  Histogram a, b, all;
  for (int i = 1; i < 50000; i += 7) {
    a.Record(i);
    all.Record(i);
  }
  for (int i = 3; i < 5000000; i += 999) {
    b.Record(i);
    all.Record(i);
  }
  a.Merge(b);
  EXPECT_EQ(a.Count(), all.Count());
  EXPECT_EQ(a.Max(), all.Max());
  EXPECT_EQ(a.Min(), all.Min());
  for (double p : {1.0, 50.0, 99.0, 99.9})
    EXPECT_EQ(a.ValueAtPercentile(p), all.ValueAtPercentile(p));
}

TEST(HistogramTest, OutOfRangeValuesAreClamped) {
  Histogram h;
  h.Record(-5);
  h.Record(int64_t{1} << 40);
  EXPECT_EQ(h.Count(), 2u);
  EXPECT_EQ(h.Min(), 0);
  EXPECT_EQ(h.Max(), Histogram::kMaxValue);
  EXPECT_EQ(h.ValueAtPercentile(100), Histogram::kMaxValue);
}

}  // namespace
}  // namespace trpc
