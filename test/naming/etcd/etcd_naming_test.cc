// The etcd selector and registry against a real etcd (a child process on loopback ports).

#include "trpc/naming/etcd/detail/etcd_naming.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "test/common/peer.h"
#include "test/naming/etcd/etcd_process.h"
#include "trpc/naming/etcd/detail/etcd_registry.h"
#include "trpc/naming/etcd/detail/etcd_selector.h"
#include "trpc/naming/registry.h"
#include "trpc/naming/selector.h"

namespace trpc::naming::etcd::detail {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;
using trpc::testing::EtcdProcess;
using trpc::testing::TcpProxy;

// Records a subscription's updates; waits for one that satisfies a predicate.
class Updates {
 public:
  Selector::OnUpdate Callback() {
    return [this](std::vector<Endpoint> list) {
      std::lock_guard<std::mutex> lock(mu_);
      lists_.push_back(std::move(list));
      cv_.notify_all();
    };
  }
  // The addresses of the latest list ("" joined), or "none" before the first.
  std::set<std::string> Latest() {
    std::lock_guard<std::mutex> lock(mu_);
    return LatestLocked();
  }
  bool WaitFor(const std::set<std::string>& want, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return !lists_.empty() && LatestLocked() == want; });
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_.size();
  }
  bool AnyEmptySince(size_t from) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = from; i < lists_.size(); ++i) {
      if (lists_[i].empty()) return true;
    }
    return false;
  }
  std::vector<Endpoint> LatestList() {
    std::lock_guard<std::mutex> lock(mu_);
    return lists_.empty() ? std::vector<Endpoint>{} : lists_.back();
  }

 private:
  std::set<std::string> LatestLocked() {
    std::set<std::string> s;
    if (lists_.empty()) return {"none"};
    for (const Endpoint& e : lists_.back()) s.insert(e.addr.ToString());
    return s;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<Endpoint>> lists_;
};

RegistryInstance Instance(const std::string& addr, const std::string& service = "svc") {
  RegistryInstance inst;
  inst.name_space = "default";
  inst.service = service;
  NetAddress::Parse(addr, &inst.addr);
  inst.meta = {{"zone", "z1"}};
  return inst;
}

PluginOptions Opts(const std::string& endpoints, std::map<std::string, std::string> more = {}) {
  PluginOptions o;
  o.values = std::move(more);
  o.values["endpoints"] = endpoints;
  if (!o.values.count("backoff_max")) o.values["backoff_max"] = "400";
  if (!o.values.count("request_timeout")) o.values["request_timeout"] = "1000";
  return o;
}

class EtcdNamingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdProcess::Installed())
      TRPC_SKIP_WITHOUT_PEER("etcd not installed (Debian: etcd-server)");
    ASSERT_TRUE(etcd_.Start()) << "etcd did not start; see " << etcd_.dir() << "/etcd.log";
  }

  std::unique_ptr<EtcdRegistry> NewRegistry(std::map<std::string, std::string> more = {}) {
    auto r = std::make_unique<EtcdRegistry>();
    std::string err;
    EXPECT_TRUE(r->Init(Opts(etcd_.endpoint(), std::move(more)), &err)) << err;
    return r;
  }
  std::unique_ptr<SelectorSubscription> Subscribe(Updates* u, const std::string& endpoints = "",
                                                  uint32_t first_wait_ms = 2000) {
    std::string err;
    EXPECT_TRUE(selector_.Init(Opts(endpoints.empty() ? etcd_.endpoint() : endpoints), &err))
        << err;
    SelectorTarget t{"svc", "default", "svc_client", "conf.yaml:3"};
    auto sub = selector_.Subscribe(t, first_wait_ms, u->Callback(), &err);
    EXPECT_NE(sub, nullptr) << err;
    return sub;
  }

  EtcdProcess etcd_;
  EtcdSelector selector_;
};

TEST_F(EtcdNamingTest, RegisterDeregisterAndStop) {
  Updates u;
  auto sub = Subscribe(&u);
  EXPECT_EQ(u.Latest(), std::set<std::string>{});  // the first list came inside Subscribe
  auto reg = NewRegistry();
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8002"), &err)) << err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:9000", "other"), &err)) << err;
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8001", "127.0.0.1:8002"}, milliseconds(1000)))
      << *u.Latest().begin();
  ASSERT_EQ(u.LatestList().size(), 2u);
  EXPECT_EQ(u.LatestList()[0].weight, 100u);
  EXPECT_EQ(u.LatestList()[0].meta.at("zone"), "z1");
  ASSERT_TRUE(reg->Deregister(Instance("127.0.0.1:8001"), &err)) << err;
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8002"}, milliseconds(1000)));
  reg->Stop();  // revokes the lease: everything goes at once
  EXPECT_TRUE(u.WaitFor({}, milliseconds(1000)));
  EXPECT_FALSE(reg->Register(Instance("127.0.0.1:8003"), &err));
}

TEST_F(EtcdNamingTest, ASubscriberFindsWhatWasRegisteredBefore) {
  auto reg = NewRegistry();
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  // A value the selector cannot read is skipped.
  ASSERT_EQ(etcd_.Post("/v3/kv/put",
                       R"({"key":")" + std::string("L3RycGMvZGVmYXVsdC9zdmMvYmFk") +  // .../svc/bad
                           R"(","value":"bm90IGpzb24="})"),                           // "not json"
            200);
  Updates u;
  auto sub = Subscribe(&u);
  EXPECT_EQ(u.Latest(), std::set<std::string>{"127.0.0.1:8001"});
}

TEST_F(EtcdNamingTest, AnAbandonedLeaseExpires) {
  Updates u;
  auto sub = Subscribe(&u);
  auto reg = NewRegistry({{"ttl", "2"}});
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(1000)));
  // Kept alive past its TTL while the registry runs.
  std::this_thread::sleep_for(milliseconds(3000));
  EXPECT_EQ(u.Latest(), std::set<std::string>{"127.0.0.1:8001"});
  const auto t0 = Clock::now();
  reg->AbandonForTest();  // as if the process died: no more keepalives, no revoke
  EXPECT_TRUE(u.WaitFor({}, milliseconds(3000)));  // TTL + 1 s
  EXPECT_LE(Clock::now() - t0, milliseconds(3100));
}

TEST_F(EtcdNamingTest, ALeaseEtcdForgotIsGrantedAgain) {
  Updates u;
  auto sub = Subscribe(&u);
  auto reg = NewRegistry({{"ttl", "3"}});
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(1000)));
  const int64_t lease = reg->lease_id();
  // Someone else revokes it: the key goes; the next keepalive (every ttl/3) finds the lease
  // gone, and the registry grants a new one and puts the key again.
  ASSERT_EQ(etcd_.Post("/v3/lease/revoke", R"({"ID":")" + std::to_string(lease) + R"("})"), 200);
  EXPECT_TRUE(u.WaitFor({}, milliseconds(1000)));
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(2500)));
  EXPECT_NE(reg->lease_id(), lease);
  reg->Stop();
  EXPECT_TRUE(u.WaitFor({}, milliseconds(1000)));
}

TEST_F(EtcdNamingTest, EtcdRestartKeepsTheListAndResumesTheWatch) {
  Updates u;
  auto sub = Subscribe(&u);
  auto reg = NewRegistry({{"ttl", "5"}});
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(1000)));
  const size_t before = u.count();
  etcd_.Kill();
  std::this_thread::sleep_for(milliseconds(1500));
  EXPECT_EQ(u.count(), before);  // no update while etcd is down: the last list stays
  EXPECT_EQ(u.Latest(), std::set<std::string>{"127.0.0.1:8001"});
  ASSERT_TRUE(etcd_.Start());
  auto reg2 = NewRegistry();
  ASSERT_TRUE(reg2->Register(Instance("127.0.0.1:8002"), &err)) << err;
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8001", "127.0.0.1:8002"}, milliseconds(2000)))
      << u.Latest().size();
  EXPECT_FALSE(u.AnyEmptySince(before));
  // The first registry's lease is kept (or granted again): its instance stays past the TTL.
  std::this_thread::sleep_for(milliseconds(6000));
  EXPECT_EQ(u.Latest(), (std::set<std::string>{"127.0.0.1:8001", "127.0.0.1:8002"}));
  EXPECT_FALSE(u.AnyEmptySince(before));
  reg2->Stop();
  reg->Stop();
  EXPECT_TRUE(u.WaitFor({}, milliseconds(1000)));
}

TEST_F(EtcdNamingTest, CompactionWhileDisconnectedMakesTheSubscriberReadAgain) {
  TcpProxy proxy(etcd_.client_port());
  Updates u;
  auto sub = Subscribe(&u, proxy.endpoint());
  auto reg = NewRegistry();
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8002"), &err)) << err;
  ASSERT_TRUE(u.WaitFor({"127.0.0.1:8001", "127.0.0.1:8002"}, milliseconds(1000)));
  proxy.Block();
  std::this_thread::sleep_for(milliseconds(200));
  // Revisions the subscriber misses, then compacted away.
  ASSERT_TRUE(reg->Deregister(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8003"), &err)) << err;
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8004", "other"), &err)) << err;
  }
  std::string body;
  ASSERT_EQ(etcd_.Post("/v3/kv/range", R"({"key":"AA=="})", &body), 200);
  const size_t at = body.find("\"revision\":\"");
  ASSERT_NE(at, std::string::npos) << body;
  const std::string rev = body.substr(at + 12, body.find('"', at + 12) - at - 12);
  ASSERT_EQ(etcd_.Post("/v3/kv/compaction", R"({"revision":")" + rev + R"("})", &body), 200)
      << body;
  EXPECT_EQ(u.Latest(), (std::set<std::string>{"127.0.0.1:8001", "127.0.0.1:8002"}));
  proxy.Unblock();
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8002", "127.0.0.1:8003"}, milliseconds(3000)))
      << u.Latest().size();
  // And the watch goes on from the new read.
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8005"), &err)) << err;
  EXPECT_TRUE(
      u.WaitFor({"127.0.0.1:8002", "127.0.0.1:8003", "127.0.0.1:8005"}, milliseconds(1000)));
}

TEST_F(EtcdNamingTest, SubscribeWhileEtcdIsDownThenItComesUp) {
  etcd_.Kill();
  Updates u;
  const auto t0 = Clock::now();
  auto sub = Subscribe(&u, "", 300);
  EXPECT_LT(Clock::now() - t0, milliseconds(1500));
  EXPECT_EQ(u.count(), 0u);
  ASSERT_TRUE(etcd_.Start());
  auto reg = NewRegistry();
  std::string err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(2000)));
}

TEST_F(EtcdNamingTest, DestroyingASubscriptionStopsItPromptly) {
  for (int i = 0; i < 5; ++i) {
    Updates u;
    auto sub = Subscribe(&u);
    const size_t n = u.count();
    const auto t0 = Clock::now();
    sub.reset();
    // The watch has no read timeout: without the cancel this waits for good. The bound is a
    // stall check.
    EXPECT_LT(Clock::now() - t0, milliseconds(1000));
    auto reg = NewRegistry();
    std::string err;
    ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
    std::this_thread::sleep_for(milliseconds(100));
    EXPECT_EQ(u.count(), n);  // never called after the destructor returned
    reg->Stop();
  }
}

TEST_F(EtcdNamingTest, EndpointsAreTriedInTurn) {
  // The first endpoint refuses connections: the ports of an etcd never started.
  EtcdProcess dead;
  const std::string endpoints = dead.endpoint() + "," + etcd_.endpoint();
  Updates u;
  auto sub = Subscribe(&u, endpoints);
  auto reg = std::make_unique<EtcdRegistry>();
  std::string err;
  ASSERT_TRUE(reg->Init(Opts(endpoints), &err)) << err;
  ASSERT_TRUE(reg->Register(Instance("127.0.0.1:8001"), &err)) << err;
  EXPECT_TRUE(u.WaitFor({"127.0.0.1:8001"}, milliseconds(2000)));
}

TEST_F(EtcdNamingTest, FactoriesKnowEtcd) {
  RegisterEtcdNaming();
  RegisterEtcdNaming();  // idempotent
  std::map<std::string, PluginOptions> sel{{"etcd", Opts(etcd_.endpoint())}};
  SelectorFactory::SetOptions(sel);
  RegistryFactory::SetOptions(sel);
  std::string err;
  auto s = SelectorFactory::Get("etcd", &err);
  ASSERT_NE(s, nullptr) << err;
  EXPECT_EQ(s->Name(), "etcd");
  auto r = RegistryFactory::Get("etcd", &err);
  ASSERT_NE(r, nullptr) << err;
  EXPECT_EQ(r->Name(), "etcd");
  s.reset();
  r.reset();
  SelectorFactory::StopAll();
  RegistryFactory::StopAll();
  SelectorFactory::SetOptions({});
  RegistryFactory::SetOptions({});
}

// etcd_process.h: etcd's ports are chosen for it, so one may be taken before etcd binds it; the
// first start then moves to two others.
TEST(EtcdProcessTest, FirstStartMovesToOtherPortsWhenOneIsTaken) {
  if (!EtcdProcess::Installed()) GTEST_SKIP() << "etcd not installed";
  EtcdProcess etcd;
  const uint16_t taken = etcd.client_port();
  ASSERT_NE(taken, 0);
  // Bound, not listening: etcd's bind fails, and a connection would be refused.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(taken);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_TRUE(etcd.Start()) << "see " << etcd.dir() << "/etcd.log";
  EXPECT_NE(etcd.client_port(), taken);
  ::close(fd);
}

}  // namespace
}  // namespace trpc::naming::etcd::detail
