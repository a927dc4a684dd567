// The etcd selector and registry over TLS and mutual TLS (`ssl:` in the plug-in's section),
// against a real etcd serving https with client certificates required.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "test/common/peer.h"
#include "test/common/tls_certs.h"
#include "test/naming/etcd/etcd_process.h"
#include "trpc/naming/etcd/detail/etcd_registry.h"
#include "trpc/naming/etcd/detail/etcd_selector.h"
#include "trpc/transport/tls_context.h"

namespace trpc::naming::etcd::detail {
namespace {

using std::chrono::milliseconds;
using trpc::testing::EtcdProcess;
using trpc::testing::TestCerts;

RegistryInstance Instance(const std::string& addr) {
  RegistryInstance inst;
  inst.name_space = "default";
  inst.service = "svc";
  NetAddress::Parse(addr, &inst.addr);
  return inst;
}

// The plug-in's settings as the config loader gives them: `ssl:` flattened to "ssl.<key>",
// with lines, as if from app.yaml (the ssl map on line 9, its keys from line 10 on).
PluginOptions TlsOpts(const std::string& endpoint, std::map<std::string, std::string> ssl) {
  PluginOptions o;
  o.values = {{"endpoints", endpoint}, {"backoff_max", "400"}, {"request_timeout", "1000"}};
  o.section_origin = "app.yaml:5";
  o.origin["ssl"] = "app.yaml:9";
  int line = 10;
  for (auto& [k, v] : ssl) {
    o.values["ssl." + k] = v;
    o.origin["ssl." + k] = "app.yaml:" + std::to_string(line++);
  }
  return o;
}

// The latest list a subscription delivered, and a wait for a wanted one.
class Latest {
 public:
  Selector::OnUpdate Callback() {
    return [this](std::vector<Endpoint> list) {
      std::lock_guard lock(mu_);
      addrs_.clear();
      for (const Endpoint& e : list) addrs_.insert(e.addr.ToString());
      cv_.notify_all();
    };
  }
  bool WaitFor(const std::set<std::string>& want) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, milliseconds(3000), [&] { return addrs_ == want; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> addrs_;
};

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EtcdProcess::Installed()) {
      TRPC_SKIP_WITHOUT_PEER("etcd not installed (Debian: etcd-server)");
    }
    TlsConfig c;
    c.enable = true;
    c.ca_cert_path = certs_.Pem("ca");
    c.cert_path = certs_.Pem("client");
    c.private_key_path = certs_.Key("client");
    std::string err;
    auto ctx = TlsContext::Create(c, TlsRole::kClient, {}, &err);
    ASSERT_NE(ctx, nullptr) << err;
    etcd_ = std::make_unique<EtcdProcess>(
        EtcdProcess::Tls{certs_.Pem("server"), certs_.Key("server"), certs_.Pem("ca"), ctx});
    ASSERT_TRUE(etcd_->Start()) << "etcd did not start; see " << etcd_->dir() << "/etcd.log";
  }

  std::map<std::string, std::string> MutualTls() const {
    return {{"enable", "true"},
            {"ca_cert_path", certs_.Pem("ca")},
            {"cert_path", certs_.Pem("client")},
            {"private_key_path", certs_.Key("client")}};
  }

  // Register() through a registry with these settings: "" on success, else its error.
  std::string RegisterWith(const PluginOptions& o) {
    EtcdRegistry reg;
    std::string err;
    if (!reg.Init(o, &err)) return "init: " + err;
    if (reg.Register(Instance("127.0.0.1:8001"), &err)) return "";
    return err;
  }

  TestCerts certs_;
  std::unique_ptr<EtcdProcess> etcd_;
};

// Registry and selector (its watch included) over mutual TLS.
TEST_F(EtcdTlsTest, RegistryAndSelectorOverMutualTls) {
  EtcdSelector selector;
  std::string err;
  ASSERT_TRUE(selector.Init(TlsOpts(etcd_->endpoint(), MutualTls()), &err)) << err;
  Latest latest;
  auto sub = selector.Subscribe({"svc", "default", "svc_client", "conf.yaml:3"}, 2000,
                                latest.Callback(), &err);
  ASSERT_NE(sub, nullptr) << err;
  EtcdRegistry reg;
  ASSERT_TRUE(reg.Init(TlsOpts(etcd_->endpoint(), MutualTls()), &err)) << err;
  ASSERT_TRUE(reg.Register(Instance("127.0.0.1:8001"), &err)) << err;
  ASSERT_TRUE(reg.Register(Instance("127.0.0.1:8002"), &err)) << err;
  EXPECT_TRUE(latest.WaitFor({"127.0.0.1:8001", "127.0.0.1:8002"}));
  ASSERT_TRUE(reg.Deregister(Instance("127.0.0.1:8001"), &err)) << err;
  EXPECT_TRUE(latest.WaitFor({"127.0.0.1:8002"}));
  reg.Stop();
  EXPECT_TRUE(latest.WaitFor({}));
}

// The bad cases each fail the call with their reason; nothing is registered.
TEST_F(EtcdTlsTest, RefusedWithoutACertificateWithAnotherCaOrInPlaintext) {
  auto no_cert = MutualTls();
  no_cert.erase("cert_path");
  no_cert.erase("private_key_path");
  std::string err = RegisterWith(TlsOpts(etcd_->endpoint(), no_cert));
  EXPECT_NE(err.find("TLS"), std::string::npos) << err;

  auto other_ca = MutualTls();
  other_ca["ca_cert_path"] = certs_.Pem("other_ca");
  err = RegisterWith(TlsOpts(etcd_->endpoint(), other_ca));
  EXPECT_NE(err.find("certificate verify failed"), std::string::npos) << err;

  // etcd's certificate names 127.0.0.1 and localhost, not this.
  auto wrong_name = MutualTls();
  wrong_name["sni_name"] = "etcd.example";
  err = RegisterWith(TlsOpts(etcd_->endpoint(), wrong_name));
  EXPECT_NE(err.find("certificate verify failed"), std::string::npos) << err;
  EXPECT_NE(err.find("hostname mismatch"), std::string::npos) << err;

  err = RegisterWith(TlsOpts(etcd_->endpoint(), {}));  // plaintext to the https port
  EXPECT_FALSE(err.empty());

  std::string body;
  EXPECT_EQ(etcd_->Post("/v3/kv/range", R"({"key":"AA==","range_end":"AA=="})", &body), 200);
  EXPECT_EQ(body.find("\"kvs\""), std::string::npos) << "something was registered: " << body;
}

TEST(EtcdTlsOptionsTest, BadSettingsStopStartUpWithTheirLine) {
  TestCerts certs;
  EtcdRegistry reg;
  std::string err;
  EXPECT_FALSE(reg.Init(
      TlsOpts("127.0.0.1:2379", {{"enable", "true"}, {"ca_cert_path", "/nonexistent/ca.pem"}}),
      &err));
  EXPECT_TRUE(err.starts_with("app.yaml:10: plugins.registry.etcd.ssl.ca_cert_path: ")) << err;
  EXPECT_NE(err.find("/nonexistent/ca.pem"), std::string::npos) << err;
  EXPECT_FALSE(reg.Init(TlsOpts("127.0.0.1:2379", {{"enable", "yes"}}), &err));
  EXPECT_EQ(err,
            "app.yaml:10: plugins.registry.etcd.ssl.enable: expected one of true|false, "
            "got 'yes'");
  EXPECT_FALSE(reg.Init(TlsOpts("127.0.0.1:2379", {{"cert_pth", "/c.pem"}}), &err));
  EXPECT_TRUE(err.starts_with("app.yaml:10: plugins.registry.etcd.ssl.cert_pth: unknown setting"))
      << err;
  EXPECT_FALSE(reg.Init(TlsOpts("127.0.0.1:2379", {{"enable", "true"},
                                                   {"cert_path", certs.Pem("client")},
                                                   {"private_key_path", certs.Key("bob")},
                                                   {"protocols", "TLSv1.1"}}),
                        &err));
  EXPECT_TRUE(
      err.starts_with("app.yaml:13: plugins.registry.etcd.ssl.protocols: 'TLSv1.1' is "
                      "below TLS 1.2"))
      << err;
}

}  // namespace
}  // namespace trpc::naming::etcd::detail
