// The etcd selector against a misbehaving gateway (fake_etcd_gateway.h): a watch cancelled as
// compacted, "created" then closed or fed garbage, an event flood, values with control bytes.
// Each attempt must wait its step of back-off, updates are coalesced, and what etcd sent is
// logged escaped. Bounded in time: each case runs for a couple of seconds.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "test/naming/etcd/fake_etcd_gateway.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/naming/etcd/detail/etcd_selector.h"

namespace trpc::naming::etcd::detail {
namespace {

using testing::FakeEtcdGateway;

constexpr uint32_t kBackoffMaxMs = 400;
constexpr int64_t kWindowMs = 2000;

// What a subscription delivered.
struct Updates {
  std::mutex mu;
  int count = 0;
  std::vector<Endpoint> last;
};

std::unique_ptr<SelectorSubscription> Subscribe(EtcdSelector* selector, const FakeEtcdGateway& gw,
                                                Updates* updates) {
  PluginOptions o;
  o.values = {{"endpoints", gw.endpoint()},
              {"backoff_max", std::to_string(kBackoffMaxMs)},
              {"request_timeout", "2000"}};
  std::string err;
  EXPECT_TRUE(selector->Init(o, &err)) << err;
  SelectorTarget target{"svc", "default", "svc", ""};
  auto sub = selector->Subscribe(
      target, 0,
      [updates](std::vector<Endpoint> list) {
        std::lock_guard<std::mutex> lock(updates->mu);
        ++updates->count;
        updates->last = std::move(list);
      },
      &err);
  EXPECT_TRUE(sub != nullptr) << err;
  return sub;
}

// Attempts (their times) follow the back-off: each waits at least half its step, the steps
// doubling from 100 ms to kBackoffMaxMs; and there are no more of them than that allows in
// the window, nor fewer than four (it keeps trying).
void ExpectBackoffSchedule(const std::vector<int64_t>& t, const char* what) {
  ASSERT_GE(t.size(), 4u) << what << ": it stopped trying";
  uint32_t step = 100;
  for (size_t i = 1; i < t.size(); ++i) {
    if (t[i] - t[i - 1] < int64_t{step / 2 - 2} * kNanosPerMilli) {
      ADD_FAILURE() << what << " " << i << " came " << (t[i] - t[i - 1]) / kNanosPerMilli
                    << " ms after " << what << " " << i - 1 << " (step " << step << " ms)";
      break;  // one report is enough
    }
    step = std::min(step * 2, kBackoffMaxMs);
  }
  std::printf("%s: %zu in %lld ms\n", what, t.size(), static_cast<long long>(kWindowMs));
  // 50 + 100 + 200 ms, then at least 200 ms each.
  const size_t most = 4 + (kWindowMs - 350) / 200;
  EXPECT_LE(t.size(), most) << what << ": " << t.size() << " in " << kWindowMs << " ms";
}

std::vector<int64_t> RunFor(const FakeEtcdGateway& gw, bool reads) {
  EtcdSelector selector;
  Updates updates;
  auto sub = Subscribe(&selector, gw, &updates);
  std::this_thread::sleep_for(std::chrono::milliseconds(kWindowMs));
  sub.reset();
  return reads ? gw.ranges() : gw.watches();
}

// First in this file: the selector's log lines are rate-limited per call site (one per 10 s),
// and this test reads the lines of two of them.
TEST(EtcdGatewayFaultTest, BadValuesAreLoggedEscapedAndCut) {
  FakeEtcdGateway::Options o;
  o.watch = FakeEtcdGateway::Watch::kCancelled;
  o.cancel_reason = "reason\x1b]0;title\x07\nsecond line";
  o.kvs = {{"/trpc/default/svc/\x1b[2Jkey\n",
            "{\"host\":\"\\u001b[31mevil\\nline" + std::string(1000, 'A') + "\",\"port\":80}"}};
  FakeEtcdGateway gw(o);
  const log::Level level = log::GetLevel();
  log::SetLevel(log::Level::kInfo);
  ::testing::internal::CaptureStderr();
  {
    EtcdSelector selector;
    Updates updates;
    auto sub = Subscribe(&selector, gw, &updates);
    const int64_t deadline = MonotonicMillis() + 10'000;
    while (gw.watches().empty() && MonotonicMillis() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::lock_guard<std::mutex> lock(updates.mu);
    EXPECT_EQ(updates.count, 1);
    EXPECT_TRUE(updates.last.empty());  // the only key was skipped
  }
  const std::string logged = ::testing::internal::GetCapturedStderr();
  log::SetLevel(level);
  EXPECT_NE(logged.find("skipping key /trpc/default/svc/\\x1b[2Jkey\\x0a: host '\\x1b[31mevil\\x0a"
                        "lineAAAA"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("bytes)"), std::string::npos) << "the long value was not cut: " << logged;
  EXPECT_NE(logged.find("watch cancelled: reason\\x1b]0;title\\x07\\x0asecond line"),
            std::string::npos)
      << logged;
  EXPECT_EQ(logged.find('\x1b'), std::string::npos) << "a raw escape byte was logged";
  EXPECT_EQ(logged.find('\x07'), std::string::npos) << "a raw control byte was logged";
  // Every line is a whole log line: nothing from etcd split one.
  size_t begin = 0;
  while (begin < logged.size()) {
    size_t end = logged.find('\n', begin);
    if (end == std::string::npos) end = logged.size();
    EXPECT_EQ(logged[begin], '[') << "a line that is not a log line: "
                                  << logged.substr(begin, end - begin);
    EXPECT_LT(end - begin, 1000u) << "a log line of " << end - begin << " bytes";
    begin = end + 1;
  }
}

// A watch cancelled as compacted makes the selector read again: one read per back-off step,
// not a read+watch loop as fast as etcd answers.
TEST(EtcdGatewayFaultTest, CompactedWatchReadsOncePerBackoffStep) {
  FakeEtcdGateway::Options o;
  o.watch = FakeEtcdGateway::Watch::kCompacted;
  FakeEtcdGateway gw(o);
  std::vector<int64_t> reads = RunFor(gw, /*reads=*/true);
  ExpectBackoffSchedule(reads, "read");
  EXPECT_LE(gw.watches().size(), reads.size() + 1);
}

// "created" then the end of the stream: a watch that never carried an event does not reset
// the back-off, so reconnections slow down to one per backoff_max.
TEST(EtcdGatewayFaultTest, CreatedThenClosedWatchBacksOff) {
  FakeEtcdGateway::Options o;
  o.watch = FakeEtcdGateway::Watch::kCreatedThenClose;
  FakeEtcdGateway gw(o);
  ExpectBackoffSchedule(RunFor(gw, /*reads=*/false), "watch");
  EXPECT_EQ(gw.ranges().size(), 1u);  // the watch resumes from its revision: no new read
}

TEST(EtcdGatewayFaultTest, CreatedThenGarbageWatchBacksOff) {
  FakeEtcdGateway::Options o;
  o.watch = FakeEtcdGateway::Watch::kCreatedThenGarbage;
  FakeEtcdGateway gw(o);
  ExpectBackoffSchedule(RunFor(gw, /*reads=*/false), "watch");
  EXPECT_EQ(gw.ranges().size(), 1u);
}

// Thousands of events, each its own watch response that changes the list: the proxy gets the
// latest list a few times a second (update_interval, 100 ms), not once per event, and the last
// list it gets is the final one.
TEST(EtcdGatewayFaultTest, EventFloodIsCoalesced) {
  FakeEtcdGateway::Options o;
  o.watch = FakeEtcdGateway::Watch::kFlood;
  o.flood_events = 5000;
  o.flood_keys = 50;
  FakeEtcdGateway gw(o);
  auto final_list = [&](const std::vector<Endpoint>& list) {
    if (list.size() != static_cast<size_t>(o.flood_keys)) return false;
    for (const Endpoint& ep : list) {
      const int k = ep.addr.port() - 10000;
      const int last_event = o.flood_events - o.flood_keys + k;  // the last one of key k
      if (ep.weight != static_cast<uint32_t>(last_event % 1000 + 1)) return false;
    }
    return true;
  };
  EtcdSelector selector;
  Updates updates;
  const int64_t start = MonotonicMillis();
  auto sub = Subscribe(&selector, gw, &updates);
  int64_t done_ms = -1;
  while (MonotonicMillis() - start < 30'000) {
    {
      std::lock_guard<std::mutex> lock(updates.mu);
      if (final_list(updates.last)) {
        done_ms = MonotonicMillis() - start;
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_GE(done_ms, 0) << "the final list never came";
  // Nothing more is delivered for a list that does not change.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::lock_guard<std::mutex> lock(updates.mu);
  EXPECT_TRUE(final_list(updates.last));
  std::printf("%d updates for %d events in %lld ms\n", updates.count, o.flood_events,
              static_cast<long long>(done_ms));
  // The first list at once, then at most one per 100 ms.
  EXPECT_LE(updates.count, 2 + done_ms / 100)
      << updates.count << " updates for " << o.flood_events << " events in " << done_ms << " ms";
}

}  // namespace
}  // namespace trpc::naming::etcd::detail
