// End-to-end tests of the admin service (admin_e2e_fixture.h): it answers while every worker
// of the services is blocked, and counts the fibers that only a steal could run.

#include <gtest/gtest.h>

#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "test/e2e/admin_e2e_fixture.h"

namespace trpc::test::helloworld {
namespace {

// The admin service has a thread of its own: it answers while every worker of the services is
// blocked in a handler (the thread itself, not only a fiber).
TEST_F(AdminE2eTest, AnswersWhileEveryWorkerIsBlocked) {
  // One connection per worker (consecutive connections land on different workers), all
  // connected before any worker blocks: the service accepts on its first worker.
  std::vector<std::shared_ptr<ServiceProxy>> proxies;
  for (int i = 0; i < kServerWorkers; ++i) {
    proxies.push_back(NewProxy());
    ASSERT_TRUE(Call(*proxies.back(), "hi").OK());
  }
  std::vector<std::future<Status>> calls;
  for (auto& proxy : proxies) {
    calls.push_back(
        std::async(std::launch::async, [this, proxy] { return Call(*proxy, "block"); }));
  }
  ASSERT_TRUE(WaitFor([] { return g_blocked.load() == kServerWorkers; }))
      << g_blocked.load() << " of " << kServerWorkers << " workers blocked";

  HttpReply r = Http(admin_, "GET", "/metrics", {}, /*timeout_ms=*/3000);
  ASSERT_EQ(r.status, 200) << "the admin did not answer while the workers were blocked";
  std::string service = std::string("service=\"") + kGreeterName + "\"";
  EXPECT_EQ(Sample(r.body, "trpc_server_connections{" + service + "}"), kServerWorkers);
  if (FiberModel()) {
    EXPECT_GE(Sample(r.body, "trpc_fibers_alive{threadmodel=\"admin_server\"}"), kServerWorkers)
        << r.body;
  }
  EXPECT_EQ(Http(admin_, "GET", "/cmds/stats", {}, 3000).status, 200);

  g_release.store(true);
  g_release.notify_all();
  for (auto& c : calls) EXPECT_TRUE(c.get().OK());
  std::string text = Metrics();
  EXPECT_EQ(Sample(text, "trpc_server_requests_total{" + MethodLabels(kSayHello) + "}"),
            2 * kServerWorkers);
}

// trpc_fiber_steals_total and /cmds/stats's "steals" count a fiber that only a steal could run:
// a handler queues one on its own worker and blocks that worker's thread until it has run.
// Then a burst of calls on two connections; the counters never go backwards.
TEST_F(AdminE2eTest, FiberStealsAreCounted) {
  if (!FiberModel()) GTEST_SKIP() << "fiber model only";
  const std::string steals_series = "trpc_fiber_steals_total{threadmodel=\"admin_server\"}";
  const std::string remote_series = "trpc_fiber_remote_steals_total{threadmodel=\"admin_server\"}";
  std::string text = Metrics();
  int64_t before = Counter(text, steals_series);
  int64_t remote_before = Counter(text, remote_series);
  ASSERT_GE(before, 0) << text;
  ASSERT_GE(remote_before, 0) << text;

  auto proxy = NewProxy();
  Status st = Call(*proxy, "steal");
  ASSERT_TRUE(st.OK()) << st.ToString();
  text = Metrics();
  int64_t after = Counter(text, steals_series);
  EXPECT_GT(after, before) << text;
  EXPECT_GE(Counter(text, remote_series), remote_before) << text;  // one group: 0 both times
  EXPECT_LE(Counter(text, remote_series), after) << text;

  auto other = NewProxy();
  std::vector<std::future<bool>> burst;
  for (auto& p : {proxy, other}) {
    burst.push_back(std::async(std::launch::async, [this, p] {
      for (int i = 0; i < 200; ++i) {
        if (!Call(*p, "hi").OK()) return false;
      }
      return true;
    }));
  }
  for (auto& b : burst) EXPECT_TRUE(b.get());

  HttpReply r = Http(admin_, "GET", "/cmds/stats");
  ASSERT_EQ(r.status, 200);
  size_t server = ThreadModelEntry(r.body, "admin_server");
  ASSERT_NE(server, std::string::npos) << r.body;
  int64_t json_steals = JsonCount(r.body, server, "steals");
  int64_t json_remote = JsonCount(r.body, server, "remote_steals");
  EXPECT_GE(json_steals, after) << r.body;
  EXPECT_GE(json_remote, 0) << r.body;
  EXPECT_LE(json_remote, json_steals) << r.body;
  EXPECT_GE(Counter(Metrics(), steals_series), json_steals);
}

// The reactors' counters in both models: a reply made on a thread other than its connection's
// reactor counts as a cross-thread reply (in /metrics and /cmds/stats), and the eventfd write
// that woke the sleeping reactor for it as a loop wake-up. The fiber model also reports its
// parks, wake-ups and spin time.
TEST_F(AdminE2eTest, CrossThreadRepliesAreCounted) {
  const std::string series =
      "trpc_threadmodel_cross_thread_replies_total{threadmodel=\"admin_server\"}";
  auto proxy = NewProxy();
  ASSERT_TRUE(Call(*proxy, "hi").OK());
  std::string text = Metrics();
  int64_t before = Counter(text, series);
  ASSERT_GE(before, 0) << text;
  Status st = Call(*proxy, "later");
  ASSERT_TRUE(st.OK()) << st.ToString();
  int64_t after = Counter(Metrics(), series);
  if (FiberModel()) {
    EXPECT_GE(after - before, 1);  // (a stolen "hi" may add one)
  } else {
    EXPECT_EQ(after - before, 1);
  }
  HttpReply r = Http(admin_, "GET", "/cmds/stats");
  ASSERT_EQ(r.status, 200);
  size_t server = ThreadModelEntry(r.body, "admin_server");
  ASSERT_NE(server, std::string::npos) << r.body;
  EXPECT_GE(JsonCount(r.body, server, "cross_thread_replies"), after) << r.body;
  EXPECT_GE(JsonCount(r.body, server, "loop_wakeups"), 1) << r.body;
  if (FiberModel()) {
    EXPECT_GE(JsonCount(r.body, server, "parks"), 1) << r.body;
    EXPECT_GE(JsonCount(r.body, server, "wakeups"), 0) << r.body;
    EXPECT_GE(JsonCount(r.body, server, "spin_ns"), 0) << r.body;
  }
}

}  // namespace
}  // namespace trpc::test::helloworld
