// The dns selector (trpc/naming/dns/detail/dns_selector.h): localhost and literal targets
// through the local resolver only, bad targets and settings, and — with a scripted resolver in
// place of getaddrinfo — updates only on a changed address set, the last list kept on failures,
// the first-wait bound, and subscriptions destroyed while refreshes deliver (run under TSan too).

#include "trpc/naming/dns/detail/dns_selector.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trpc/naming/selector.h"

namespace trpc::naming {
namespace {

using std::chrono::milliseconds;

// Collects the lists a subscription delivers.
struct Updates {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::string>> lists;

  Selector::OnUpdate Callback() {
    return [this](std::vector<Endpoint> eps) {
      std::vector<std::string> names;
      for (const Endpoint& e : eps) names.push_back(e.addr.ToString());
      std::lock_guard lock(mu);
      lists.push_back(std::move(names));
      cv.notify_all();
    };
  }
  size_t Count() {
    std::lock_guard lock(mu);
    return lists.size();
  }
  std::vector<std::string> Last() {
    std::lock_guard lock(mu);
    return lists.empty() ? std::vector<std::string>() : lists.back();
  }
  bool WaitFor(size_t count, milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return lists.size() >= count; });
  }
};

// A scripted resolver: the addresses it answers (or a failure), and how long it takes.
struct FakeDns {
  std::mutex mu;
  std::vector<std::string> ips = {"10.0.0.1"};
  bool fail = false;
  milliseconds delay{0};
  std::atomic<int> lookups{0};

  void Set(std::vector<std::string> v) {
    std::lock_guard lock(mu);
    ips = std::move(v);
  }
  void SetFail(bool f) {
    std::lock_guard lock(mu);
    fail = f;
  }
  DnsResolver Resolver() {
    return [this](const std::string& host, uint16_t port, std::vector<NetAddress>* out,
                  std::string* error) {
      lookups.fetch_add(1);
      milliseconds d;
      {
        std::lock_guard lock(mu);
        d = delay;
      }
      if (d.count() > 0) std::this_thread::sleep_for(d);
      std::lock_guard lock(mu);
      if (fail) {
        *error = "scripted failure";
        return false;
      }
      out->clear();
      for (const std::string& ip : ips) {
        NetAddress a;
        EXPECT_TRUE(NetAddress::FromIpPort(ip, port, &a));
        out->push_back(a);
      }
      return true;
    };
  }
};

class DnsSelectorTest : public ::testing::Test {
 protected:
  void SetUp() override { RegisterDnsSelector(); }
  void TearDown() override {
    SetDnsResolverForTesting({});
    SelectorFactory::StopAll();
    SelectorFactory::SetOptions({});
  }

  // The dns selector with `refresh_interval` (0 = the default).
  std::shared_ptr<Selector> Get(uint32_t refresh_ms = 0) {
    std::map<std::string, PluginOptions> options;
    if (refresh_ms != 0) options["dns"].values["refresh_interval"] = std::to_string(refresh_ms);
    SelectorFactory::SetOptions(options);
    std::string err;
    auto s = SelectorFactory::Get("dns", &err);
    EXPECT_TRUE(s) << err;
    return s;
  }

  static SelectorTarget Target(std::string target) {
    return SelectorTarget{std::move(target), "default", "callee", "client.yaml:7"};
  }
};

TEST_F(DnsSelectorTest, LocalhostResolvesThroughTheLocalResolver) {
  auto s = Get();
  Updates u;
  std::string err;
  auto sub = s->Subscribe(Target("localhost:80"), 5000, u.Callback(), &err);
  ASSERT_TRUE(sub) << err;
  ASSERT_EQ(u.Count(), 1u);  // within first_wait_ms, before Subscribe returned
  std::vector<std::string> list = u.Last();
  EXPECT_TRUE(std::find(list.begin(), list.end(), "127.0.0.1:80") != list.end() ||
              std::find(list.begin(), list.end(), "[::1]:80") != list.end());
  EXPECT_TRUE(std::is_sorted(list.begin(), list.end()));
}

TEST_F(DnsSelectorTest, LiteralIpsGiveExactlyThemselves) {
  auto s = Get();
  for (const char* target : {"127.0.0.1:8080", "[::1]:8080"}) {
    Updates u;
    std::string err;
    auto sub = s->Subscribe(Target(target), 0, u.Callback(), &err);
    ASSERT_TRUE(sub) << err;
    ASSERT_EQ(u.Count(), 1u) << target;  // inside Subscribe, even with no wait allowed
    EXPECT_EQ(u.Last(), std::vector<std::string>{target});
  }
}

TEST_F(DnsSelectorTest, BadTargetsFail) {
  auto s = Get();
  for (const char* target :
       {"localhost", "localhost:", "localhost:0", "localhost:65536", "localhost:8o", ":80",
        "::1:80", "[::1]80", "[localhost]:80", "[127.0.0.1]:80", "a,b:80", ""}) {
    Updates u;
    std::string err;
    EXPECT_EQ(s->Subscribe(Target(target), 100, u.Callback(), &err), nullptr) << target;
    EXPECT_EQ(err, std::string("client.yaml:7: client callee: bad target '") + target +
                       "' (the dns selector takes host:port)");
    EXPECT_EQ(u.Count(), 0u);
  }
}

TEST_F(DnsSelectorTest, BadSettingsFailInitWithTheirLine) {
  struct Case {
    const char* key;
    const char* value;
    const char* want;
  };
  const Case cases[] = {
      {"refresh_interval", "99",
       "conf.yaml:12: plugins.selector.dns.refresh_interval: '99' is not a number of "
       "milliseconds in 100..86400000"},
      {"refresh_interval", "86400001",
       "conf.yaml:12: plugins.selector.dns.refresh_interval: '86400001' is not a number of "
       "milliseconds in 100..86400000"},
      {"refresh_interval", "1s",
       "conf.yaml:12: plugins.selector.dns.refresh_interval: '1s' is not a number of "
       "milliseconds in 100..86400000"},
      {"refresh", "100",
       "conf.yaml:12: plugins.selector.dns.refresh: unknown setting (the dns selector takes "
       "refresh_interval)"},
  };
  for (const Case& c : cases) {
    PluginOptions o;
    o.values[c.key] = c.value;
    o.origin[c.key] = "conf.yaml:12";
    o.section_origin = "conf.yaml:10";
    SelectorFactory::SetOptions({{"dns", o}});
    std::string err;
    EXPECT_EQ(SelectorFactory::Get("dns", &err), nullptr) << c.key << "=" << c.value;
    EXPECT_EQ(err, c.want);
  }
  PluginOptions good;
  good.values["refresh_interval"] = "100";
  SelectorFactory::SetOptions({{"dns", good}});
  std::string err;
  EXPECT_NE(SelectorFactory::Get("dns", &err), nullptr) << err;
}

TEST_F(DnsSelectorTest, DeliversOnlyChangesAndKeepsTheListOnFailures) {
  FakeDns dns;
  dns.Set({"10.0.0.2", "10.0.0.1"});
  SetDnsResolverForTesting(dns.Resolver());
  auto s = Get(100);
  Updates u;
  std::string err;
  auto sub = s->Subscribe(Target("svc.example:9000"), 5000, u.Callback(), &err);
  ASSERT_TRUE(sub) << err;
  ASSERT_EQ(u.Count(), 1u);
  EXPECT_EQ(u.Last(), (std::vector<std::string>{"10.0.0.1:9000", "10.0.0.2:9000"}));

  // The same set in another order: lookups go on, nothing is delivered.
  dns.Set({"10.0.0.1", "10.0.0.2", "10.0.0.1"});
  int lookups = dns.lookups.load();
  std::this_thread::sleep_for(milliseconds(450));
  EXPECT_GE(dns.lookups.load(), lookups + 2);
  EXPECT_EQ(u.Count(), 1u);

  // A changed set is delivered at the next refresh.
  dns.Set({"10.0.0.3"});
  ASSERT_TRUE(u.WaitFor(2, milliseconds(5000)));
  EXPECT_EQ(u.Last(), std::vector<std::string>{"10.0.0.3:9000"});

  // Failures keep the last list; resolving the same set again delivers nothing either.
  dns.SetFail(true);
  lookups = dns.lookups.load();
  std::this_thread::sleep_for(milliseconds(450));
  EXPECT_GE(dns.lookups.load(), lookups + 2);
  dns.SetFail(false);
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(u.Count(), 2u);
  dns.Set({"10.0.0.4", "10.0.0.3"});
  ASSERT_TRUE(u.WaitFor(3, milliseconds(5000)));
  EXPECT_EQ(u.Last(), (std::vector<std::string>{"10.0.0.3:9000", "10.0.0.4:9000"}));
}

TEST_F(DnsSelectorTest, SubscribeWaitsAtMostFirstWait) {
  FakeDns dns;
  dns.delay = milliseconds(400);
  SetDnsResolverForTesting(dns.Resolver());
  auto s = Get(1000);
  Updates u;
  std::string err;
  auto start = std::chrono::steady_clock::now();
  auto sub = s->Subscribe(Target("slow.example:80"), 50, u.Callback(), &err);
  auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(sub) << err;
  EXPECT_LT(waited, milliseconds(300));
  EXPECT_EQ(u.Count(), 0u);
  ASSERT_TRUE(u.WaitFor(1, milliseconds(5000)));  // later, from the background thread
  EXPECT_EQ(u.Last(), std::vector<std::string>{"10.0.0.1:80"});
}

TEST_F(DnsSelectorTest, DestroyingSubscriptionsWhileRefreshesDeliverIsSafe) {
  // Every lookup answers a different set, so every refresh (each 100 ms) delivers; callbacks
  // write into state that dies right after its subscription: a callback running or starting
  // after the destructor returned would be a use-after-free (ASan) or a race (TSan), and is
  // caught below by the `gone` flag.
  FakeDns dns;
  std::atomic<int> flip{0};
  SetDnsResolverForTesting([&](const std::string& host, uint16_t port, std::vector<NetAddress>* out,
                               std::string* error) {
    int f = flip.fetch_add(1);
    std::this_thread::sleep_for(milliseconds(f % 3));
    NetAddress a;
    NetAddress::FromIpPort("10.0.1." + std::to_string(f % 200 + 1), port, &a);
    out->assign({a});
    return true;
  });
  auto s = Get(100);
  struct State {
    std::atomic<bool> gone{false};
    std::atomic<int> calls{0};
    std::vector<int> writes;  // unsynchronized on purpose: only the callback touches it
  };
  std::atomic<int> late_calls{0};
  std::atomic<int> total_calls{0};
  for (int round = 0; round < 12; ++round) {
    std::vector<std::unique_ptr<State>> states;
    std::vector<std::unique_ptr<SelectorSubscription>> subs;
    for (int i = 0; i < 4; ++i) {
      states.push_back(std::make_unique<State>());
      State* st = states.back().get();
      std::string err;
      auto sub = s->Subscribe(
          Target("host" + std::to_string(i) + ".example:80"), i == 0 ? 1000 : 0,
          [st, &late_calls, &total_calls](std::vector<Endpoint> eps) {
            if (st->gone.load()) late_calls.fetch_add(1);
            st->writes.push_back(static_cast<int>(eps.size()));
            st->calls.fetch_add(1);
            total_calls.fetch_add(1);
            std::this_thread::sleep_for(milliseconds(1));
          },
          &err);
      ASSERT_TRUE(sub) << err;
      subs.push_back(std::move(sub));
    }
    std::this_thread::sleep_for(milliseconds(30 + 37 * round % 150));
    for (size_t i = 0; i < subs.size(); ++i) {
      subs[i].reset();
      states[i]->gone.store(true);
      states[i].reset();
    }
  }
  EXPECT_EQ(late_calls.load(), 0);
  EXPECT_GT(total_calls.load(), 12);
}

TEST_F(DnsSelectorTest, ASubscriptionMayBeDestroyedByItsOwnCallback) {
  std::atomic<int> flip{0};
  SetDnsResolverForTesting([&](const std::string& host, uint16_t port, std::vector<NetAddress>* out,
                               std::string* error) {
    NetAddress a;
    NetAddress::FromIpPort("10.0.2." + std::to_string(flip.fetch_add(1) % 200 + 1), port, &a);
    out->assign({a});
    return true;
  });
  auto s = Get(100);
  std::mutex mu;
  std::unique_ptr<SelectorSubscription> held;
  std::atomic<int> calls{0};
  std::atomic<bool> destroyed{false};
  std::string err;
  auto sub = s->Subscribe(
      Target("self.example:80"), 5000,
      [&](std::vector<Endpoint>) {
        if (calls.fetch_add(1) == 0) return;  // the first list, inside Subscribe
        std::unique_ptr<SelectorSubscription> mine;
        {
          std::lock_guard lock(mu);
          mine = std::move(held);
        }
        mine.reset();  // on the background thread, inside this very callback
        destroyed.store(true);
      },
      &err);
  ASSERT_TRUE(sub) << err;
  {
    std::lock_guard lock(mu);
    held = std::move(sub);
  }
  for (int i = 0; i < 500 && !destroyed.load(); ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_TRUE(destroyed.load());
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_EQ(calls.load(), 2);
}

TEST_F(DnsSelectorTest, StopEndsTheBackgroundThread) {
  FakeDns dns;
  SetDnsResolverForTesting(dns.Resolver());
  auto s = Get(100);
  Updates u;
  std::string err;
  auto sub = s->Subscribe(Target("svc.example:80"), 5000, u.Callback(), &err);
  ASSERT_TRUE(sub) << err;
  sub.reset();
  s->Stop();
  int lookups = dns.lookups.load();
  std::this_thread::sleep_for(milliseconds(250));
  EXPECT_EQ(dns.lookups.load(), lookups);
}

}  // namespace
}  // namespace trpc::naming
