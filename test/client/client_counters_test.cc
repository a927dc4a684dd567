// The per-callee client counters (client_counters.h): methods found without a lock, the cap on
// distinct names, per-thread shards summed by a scrape, and a stress of threads counting,
// inserting and scraping at once (run under TSan in CI).

#include "trpc/client/detail/client_counters.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace trpc::detail {
namespace {

const ClientMethodMetrics* Find(const ClientServiceMetrics& s, const std::string& method) {
  for (const auto& m : s.methods) {
    if (m.name == method) return &m;
  }
  return nullptr;
}

TEST(ClientCountersTest, CountsACallFromStartToEnd) {
  ClientCounters c("callee", "trpc");
  ClientMethodCounters* m = c.Method("/pkg.S/A");
  EXPECT_EQ(c.Method("/pkg.S/A"), m);  // found again, not made twice
  m->Start();
  m->Start();
  ClientMethodCounters::Add(m->Local().attempts);
  ClientServiceMetrics snap = c.Collect();
  ASSERT_EQ(snap.methods.size(), 1u);
  EXPECT_EQ(snap.methods[0].in_flight, 2u);
  EXPECT_EQ(snap.methods[0].calls, 0u);
  m->End(kLatencyBucketBoundsNs[0], 0, 0);  // le 50 us
  m->End(kLatencyBucketBoundsNs[0] + 1, kClientInvokeTimeoutErr, 0);
  snap = c.Collect();
  const ClientMethodMetrics& a = snap.methods[0];
  EXPECT_EQ(a.name, "/pkg.S/A");
  EXPECT_EQ(a.in_flight, 0u);
  EXPECT_EQ(a.calls, 2u);
  EXPECT_EQ(a.attempts, 1u);
  EXPECT_EQ(a.latency_buckets[0], 1u);
  EXPECT_EQ(a.latency_buckets[1], 1u);
  EXPECT_EQ(a.latency_sum_ns, 2 * uint64_t{50'000} + 1);
  using Codes = std::vector<std::pair<std::string, uint64_t>>;
  EXPECT_EQ(a.errors, (Codes{{"101", 1}}));
  EXPECT_EQ(snap.name, "callee");
  EXPECT_EQ(snap.protocol, "trpc");
}

TEST(ClientCountersTest, NamesPastTheCapCountAsOther) {
  ClientCounters c("callee", "http");
  for (size_t i = 0; i < ClientCounters::kMaxMethods + 10; ++i) {
    ClientMethodCounters* m = c.Method("GET /item/" + std::to_string(i));
    m->Start();
    m->End(1000, 0, 0);
  }
  ClientServiceMetrics snap = c.Collect();
  ASSERT_EQ(snap.methods.size(), ClientCounters::kMaxMethods + 1);
  const ClientMethodMetrics* other = Find(snap, "other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->calls, 10u);
  // A name made before the cap is still its own.
  EXPECT_NE(c.Method("GET /item/0")->name(), "other");
  EXPECT_EQ(c.Method("GET /item/9999")->name(), "other");
}

TEST(ClientCountersTest, CalleesAreSharedByNameAndLiveOn) {
  auto a = ClientCounters::For("client_counters_test.shared", "trpc");
  auto b = ClientCounters::For("client_counters_test.shared", "grpc");
  EXPECT_EQ(a.get(), b.get());
  a->Method("/x")->Start();
  a->Method("/x")->End(10, 0, 0);
  a.reset();
  b.reset();
  bool found = false;
  for (const auto& s : ClientCounters::CollectAll()) {
    if (s.name != "client_counters_test.shared") continue;
    found = true;
    EXPECT_EQ(s.protocol, "trpc");  // the first proxy's
    ASSERT_NE(Find(s, "/x"), nullptr);
    EXPECT_EQ(Find(s, "/x")->calls, 1u);
  }
  EXPECT_TRUE(found);
}

TEST(ClientCountersTest, ShardsArePerThreadAndOnTheirOwnLines) {
  EXPECT_EQ(sizeof(ClientMethodShard) % 64, 0u);
  const size_t n = ClientCounters::ShardCount();
  EXPECT_GE(n, 1u);
  EXPECT_LE(n, 64u);
  EXPECT_EQ(n & (n - 1), 0u);
  const size_t mine = ClientCounters::Shard();
  EXPECT_EQ(ClientCounters::Shard(), mine);  // stable for a thread
  if (n >= 2) {
    // The next thread to count takes the next ordinal: a different shard.
    size_t other = mine;
    std::thread([&other] { other = ClientCounters::Shard(); }).join();
    EXPECT_NE(other, mine);
  }
}

// Threads start and end calls of shared and private methods while others insert new names and
// a scraper collects: every call is counted once, nothing is lost, and a scrape never sees more
// ended calls than started ones, nor counts going backwards.
TEST(ClientCountersTest, CountingInsertingAndScrapingAtOnce) {
  ClientCounters c("stress", "trpc");
  constexpr int kThreads = 4;
  constexpr int kCalls = 20000;
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  std::thread scraper([&] {
    uint64_t last = 0;
    while (!done.load()) {
      ClientServiceMetrics s = c.Collect();
      uint64_t ended = 0;
      for (const auto& m : s.methods) ended += m.calls;
      EXPECT_GE(ended, last);
      last = ended;
      scrapes.fetch_add(1);
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&c, t] {
      for (int i = 0; i < kCalls; ++i) {
        ClientMethodCounters* m =
            c.Method(i % 2 == 0 ? std::string("/shared")
                                : "/t" + std::to_string(t) + "/" + std::to_string(i % 16));
        m->Start();
        ClientMethodCounters::Add(m->Local().attempts);
        m->End(i, i % 100 == 0 ? kClientNetworkErr : 0, 0);
      }
    });
  }
  for (auto& w : workers) w.join();
  done.store(true);
  scraper.join();
  EXPECT_GT(scrapes.load(), 0);
  ClientServiceMetrics s = c.Collect();
  uint64_t calls = 0;
  uint64_t attempts = 0;
  uint64_t errors = 0;
  for (const auto& m : s.methods) {
    calls += m.calls;
    attempts += m.attempts;
    EXPECT_EQ(m.in_flight, 0u) << m.name;
    for (const auto& [code, n] : m.errors) errors += n;
  }
  EXPECT_EQ(calls, uint64_t{kThreads} * kCalls);
  EXPECT_EQ(attempts, calls);
  EXPECT_EQ(errors, uint64_t{kThreads} * kCalls / 100);
  ASSERT_NE(Find(s, "/shared"), nullptr);
  EXPECT_EQ(Find(s, "/shared")->calls, uint64_t{kThreads} * kCalls / 2);
  EXPECT_EQ(s.methods.size(), 1u + kThreads * 8);  // /shared and 8 odd names per thread
}

}  // namespace
}  // namespace trpc::detail
