// Outlier ejection (detail::OutlierEjection) and the endpoint choice around it
// (detail::ChooseBackend) on a simulated clock, without a thread model or connections.

#include "trpc/client/detail/outlier_ejection.h"

#include <gtest/gtest.h>

#include <set>

#include "trpc/client/detail/endpoint_set.h"

namespace trpc::detail {
namespace {

constexpr int64_t kMs = kNanosPerMilli;

int64_t g_now = 0;
int64_t FakeClock() { return g_now; }

class OutlierEjectionTest : public ::testing::Test {
 protected:
  void Make(size_t endpoints) {
    g_now = 1000 * kNanosPerSecond;
    set_ = std::make_unique<EndpointSet>(nullptr, "callee",
                                         LoadBalancerFactory::Find("round_robin"), 0);
    std::vector<Endpoint> list(endpoints);
    for (size_t i = 0; i < endpoints; ++i) {
      NetAddress::FromIpPort("127.0.0.1", static_cast<uint16_t>(9000 + i), &list[i].addr);
    }
    set_->Update(list);
    ejection_ = std::make_unique<OutlierEjection>(config_, "callee", set_.get(), &FakeClock);
  }
  Backend& At(size_t i) { return *set_->Latest()->backends.at(i); }
  void Fail(size_t i, int times, int ret = kClientConnectErr) {
    for (int k = 0; k < times; ++k) ejection_->OnResult(At(i), ret, 0);
  }
  void Succeed(size_t i) { ejection_->OnResult(At(i), 0, 0); }

  OutlierEjectionConfig config_;  // 5 failures, 1 s, 30 s, 50%
  std::unique_ptr<EndpointSet> set_;
  std::unique_ptr<OutlierEjection> ejection_;
};

TEST_F(OutlierEjectionTest, EjectsAfterConsecutiveFailuresForTheBaseTime) {
  config_.consecutive_failures = 3;
  Make(3);
  Fail(0, 2);
  EXPECT_FALSE(At(0).Ejected(g_now));
  Fail(0, 1);
  EXPECT_TRUE(At(0).Ejected(g_now));
  EXPECT_TRUE(At(0).Ejected(g_now + 999 * kMs));
  EXPECT_FALSE(At(0).Ejected(g_now + 1000 * kMs));
  EXPECT_FALSE(At(1).Ejected(g_now));
}

TEST_F(OutlierEjectionTest, OnlyEndpointFailuresCountAndASuccessResetsTheCount) {
  config_.consecutive_failures = 3;
  Make(3);
  for (int ret :
       {kClientConnectErr, kClientNetworkErr, kServerSystemErr, kClientInvokeTimeoutErr}) {
    EXPECT_TRUE(OutlierEjection::IsEndpointFailure(ret)) << ret;
  }
  Fail(0, 2);
  Succeed(0);
  Fail(0, 2);
  EXPECT_FALSE(At(0).Ejected(g_now));
  // Overload, a cancelled hedge and a handler's own failure say nothing of the endpoint.
  Fail(1, 10, kServerOverloadErr);
  Fail(1, 10, kClientCanceledErr);
  Fail(1, 10, kClientDecodeErr);
  EXPECT_FALSE(At(1).Ejected(g_now));
  // A cancelled attempt does not reset a count either.
  Fail(2, 2);
  Fail(2, 1, kClientCanceledErr);
  Fail(2, 1);
  EXPECT_TRUE(At(2).Ejected(g_now));
}

TEST_F(OutlierEjectionTest, EjectionsInARowDoubleUpToTheMaximum) {
  config_.consecutive_failures = 1;
  config_.base_ejection_time = 100;
  config_.max_ejection_time = 300;
  Make(3);
  for (int64_t ms : {100, 200, 300, 300}) {
    Fail(0, 1);
    ASSERT_TRUE(At(0).Ejected(g_now));
    EXPECT_EQ(At(0).ejected_until_ns.load(), g_now + ms * kMs);
    g_now += ms * kMs;  // the ejection ends; the next failure comes at once
  }
  // A success once the ejection has ended forgets the doubling.
  Succeed(0);
  Fail(0, 1);
  EXPECT_EQ(At(0).ejected_until_ns.load(), g_now + 100 * kMs);
}

TEST_F(OutlierEjectionTest, AtMostMaxEjectionPercentOut) {
  config_.consecutive_failures = 1;
  config_.max_ejection_percent = 50;
  Make(4);
  for (size_t i = 0; i < 4; ++i) Fail(i, 3);
  int out = 0;
  for (size_t i = 0; i < 4; ++i) out += At(i).Ejected(g_now) ? 1 : 0;
  EXPECT_EQ(out, 2);
}

TEST_F(OutlierEjectionTest, TheOnlyEndpointIsNeverEjected) {
  config_.consecutive_failures = 1;
  config_.max_ejection_percent = 100;
  Make(1);
  Fail(0, 10);
  EXPECT_FALSE(At(0).Ejected(g_now));
}

TEST_F(OutlierEjectionTest, DisabledWithZeroFailures) {
  config_.consecutive_failures = 0;
  Make(3);
  Fail(0, 100);
  EXPECT_FALSE(At(0).Ejected(g_now));
}

TEST_F(OutlierEjectionTest, ChoiceSkipsEjectedAndTriedEndpointsWhileOthersAreLeft) {
  config_.consecutive_failures = 1;
  Make(3);
  Fail(1, 1);
  ASSERT_TRUE(At(1).Ejected(g_now));
  auto ctx = MakeClientContext();
  std::shared_ptr<const BackendSet> set = set_->Latest();
  for (int i = 0; i < 30; ++i) {
    EXPECT_NE(ChooseBackend(*set, *ctx, nullptr, g_now).get(), &At(1));
  }
  // Endpoint 0 tried already, 1 ejected: 2.
  std::vector<BackendPtr> tried = {set->backends[0]};
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(ChooseBackend(*set, *ctx, &tried, g_now).get(), &At(2));
  }
  // 0 and 2 tried, 1 ejected: the ejected one, rather than failing the call.
  tried.push_back(set->backends[2]);
  EXPECT_EQ(ChooseBackend(*set, *ctx, &tried, g_now).get(), &At(1));
  // All tried: one of them all the same.
  tried.push_back(set->backends[1]);
  EXPECT_NE(ChooseBackend(*set, *ctx, &tried, g_now), nullptr);
}

TEST_F(OutlierEjectionTest, EveryEndpointEjectedStillYieldsOne) {
  config_.consecutive_failures = 1;
  config_.max_ejection_percent = 100;
  Make(2);
  Fail(0, 1);
  Fail(1, 1);
  ASSERT_TRUE(At(0).Ejected(g_now));
  ASSERT_TRUE(At(1).Ejected(g_now));
  auto ctx = MakeClientContext();
  std::set<const Backend*> chosen;
  for (int i = 0; i < 10; ++i)
    chosen.insert(ChooseBackend(*set_->Latest(), *ctx, nullptr, g_now).get());
  EXPECT_FALSE(chosen.empty());
}

TEST_F(OutlierEjectionTest, UpdateKeepsTheBackendsOfEndpointsThatStay) {
  Make(2);
  BackendPtr kept = set_->Latest()->backends[1];
  Endpoint e;
  NetAddress::FromIpPort("127.0.0.1", 9001, &e.addr);
  Endpoint n;
  NetAddress::FromIpPort("127.0.0.1", 9100, &n.addr);
  set_->Update({e, n, e});  // listed twice: once
  auto set = set_->Latest();
  ASSERT_EQ(set->backends.size(), 2u);
  EXPECT_EQ(set->backends[0], kept);
  EXPECT_EQ(set->backends[1]->name, "127.0.0.1:9100");
}

}  // namespace
}  // namespace trpc::detail
