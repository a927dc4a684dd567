#include "trpc/admin/detail/process_metrics.h"

#include <gtest/gtest.h>

namespace trpc::admin {
namespace {

// A /proc/PID/stat line whose command name holds spaces and parentheses; utime 250, stime 150
// (ticks), rss 3000 (pages).
constexpr char kStat[] =
    "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 20 0 5 0 "
    "123456 987654321 3000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n";

TEST(ProcessMetricsTest, ParsesFieldsAfterTheLastParenthesis) {
  ProcessMetrics m;
  ASSERT_TRUE(ParseProcStat(kStat, 100, 4096, &m));
  EXPECT_DOUBLE_EQ(m.cpu_seconds, 4.0);
  EXPECT_EQ(m.resident_memory_bytes, 3000u * 4096);
}

TEST(ProcessMetricsTest, RejectsTruncatedOrMalformedText) {
  ProcessMetrics m;
  EXPECT_FALSE(ParseProcStat("", 100, 4096, &m));
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2 3", 100, 4096, &m));
  EXPECT_FALSE(
      ParseProcStat("4242 (x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 2x5 150", 100, 4096, &m));
  EXPECT_FALSE(ParseProcStat(kStat, 0, 4096, &m));
}

TEST(ProcessMetricsTest, ReadsThisProcess) {
  ProcessMetrics m;
  ASSERT_TRUE(ReadProcessMetrics(&m));
  EXPECT_GE(m.cpu_seconds, 0);
  EXPECT_GT(m.resident_memory_bytes, 1u << 20);
}

}  // namespace
}  // namespace trpc::admin
