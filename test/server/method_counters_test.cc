#include "trpc/server/detail/method_counters.h"

#include <gtest/gtest.h>

#include <memory>

namespace trpc::detail {
namespace {

MethodMetrics Sum(const MethodCounters* blocks, size_t n) {
  MethodMetrics m;
  std::array<uint64_t, kErrorSlots> errors{};
  std::array<LatencySnapshot, kWireStatuses> by_status{};
  for (size_t i = 0; i < n; ++i) blocks[i].AddTo(&m, &errors, &by_status);
  m.errors = NamedErrors(errors);
  m.by_wire_status = LatencyByStatus::Seen(by_status);
  return m;
}

TEST(MethodCountersTest, BucketBoundsAreInclusive) {
  auto c = std::make_unique<MethodCounters>();
  c->Record(-5, 0, 0);                         // a clock step back: bucket 0, adds 0
  c->Record(kLatencyBucketBoundsNs[0], 0, 0);  // exactly 50 us: le="0.00005"
  c->Record(kLatencyBucketBoundsNs[0] + 1, 0, 0);
  c->Record(kLatencyBucketBoundsNs.back(), 0, 0);      // exactly 10 s: le="10"
  c->Record(kLatencyBucketBoundsNs.back() + 1, 0, 0);  // above: +Inf only
  MethodMetrics m = Sum(c.get(), 1);
  EXPECT_EQ(m.requests, 5u);
  EXPECT_EQ(m.latency_buckets[0], 2u);
  EXPECT_EQ(m.latency_buckets[1], 1u);
  EXPECT_EQ(m.latency_buckets[kLatencyBuckets - 2], 1u);
  EXPECT_EQ(m.latency_buckets[kLatencyBuckets - 1], 1u);
  EXPECT_EQ(m.latency_sum_ns, uint64_t{50'000} + 50'001 + 20'000'000'001);
  EXPECT_TRUE(m.errors.empty());
}

TEST(MethodCountersTest, ErrorsByCodeInAFixedOrderAcrossReactors) {
  auto blocks = std::make_unique<MethodCounters[]>(2);
  blocks[1].Record(1000, kServerNoFuncErr, 0);
  blocks[1].Record(1000, 12345, 0);             // not a framework code
  blocks[0].Record(1000, 0, 7);                 // the handler's own code
  blocks[0].Record(1000, kServerSystemErr, 3);  // ret wins over func_ret
  blocks[0].Record(1000, kServerNoFuncErr, 0);
  blocks[0].Record(1000, 0, 0);
  MethodMetrics m = Sum(blocks.get(), 2);
  EXPECT_EQ(m.requests, 6u);
  using Codes = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(m.errors, (Codes{{"func", 1}, {"12", 2}, {"31", 1}, {"other", 1}}));
}

TEST(MethodCountersTest, StartsAndWireStatusesAcrossReactors) {
  auto blocks = std::make_unique<MethodCounters[]>(2);
  blocks[0].Start();
  blocks[1].Start();
  blocks[1].Start();
  blocks[0].Record(1000, 0, 0, 0);                                // OK
  blocks[1].Record(60'000, 0, 0, 0);                              // OK, le 0.0001
  blocks[1].Record(2000, kServerNoFuncErr, 0, 12);                // UNIMPLEMENTED
  blocks[0].Record(3000, kServerSystemErr, 0, -1);                // a protocol without statuses
  blocks[0].Record(4000, 0, 0, static_cast<int>(kWireStatuses));  // out of range: not kept
  MethodMetrics m = Sum(blocks.get(), 2);
  EXPECT_EQ(m.started, 3u);
  EXPECT_EQ(m.requests, 5u);
  ASSERT_EQ(m.by_wire_status.size(), 2u);
  EXPECT_EQ(m.by_wire_status[0].first, 0);
  EXPECT_EQ(m.by_wire_status[0].second.count, 2u);
  EXPECT_EQ(m.by_wire_status[0].second.buckets[0], 1u);
  EXPECT_EQ(m.by_wire_status[0].second.buckets[1], 1u);
  EXPECT_EQ(m.by_wire_status[0].second.sum_ns, 61'000u);
  EXPECT_EQ(m.by_wire_status[1].first, 12);
  EXPECT_EQ(m.by_wire_status[1].second.count, 1u);
}

TEST(MethodCountersTest, EveryCountedCodeHasItsOwnSlot) {
  for (size_t i = 0; i < kCountedRetCodes.size(); ++i) {
    size_t slot = ErrorSlotOf(kCountedRetCodes[i]);
    EXPECT_EQ(ErrorSlotName(slot), std::to_string(kCountedRetCodes[i]));
  }
  EXPECT_EQ(ErrorSlotName(ErrorSlotOf(0)), "func");
  EXPECT_EQ(ErrorSlotName(ErrorSlotOf(-1)), "other");
  // Each reactor's block starts on its own cache line.
  EXPECT_EQ(sizeof(MethodCounters) % 64, 0u);
}

}  // namespace
}  // namespace trpc::detail
