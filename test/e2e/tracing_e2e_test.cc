// Tracing end to end (docs/observability.md#tracing), against a real OpenTelemetry Collector
// (third_party/otelcol, built by third_party/setup.sh --with-test-tools) that the test starts:
// a client calls a front Greeter over trpc, which calls a backend Greeter over gRPC; the
// `tracing` filters on every side make the spans, the exporter sends them over OTLP/HTTP, and
// the collector's debug exporter prints them, which the test reads back: one trace, four spans,
// each the child of the one before. Also: sampling follows the caller's flag, and a collector
// that is down costs the calls nothing but the spans, which are counted as dropped. Both thread
// models (TRPC_E2E_THREAD_MODEL).

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/loopback_listener.h"
#include "test/common/peer.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/client/service_proxy.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/tracing/tracing.h"

namespace trpc::test::helloworld {
namespace {

constexpr char kFront[] = "trpc.test.helloworld.Front";
constexpr char kBackend[] = "trpc.test.helloworld.Backend";
constexpr char kClientModel[] = "tracing_client";

constexpr char kServerYaml[] = R"(server:
  app: test
  server: tracing_e2e
  filter: [tracing]
  service:
    - name: trpc.test.helloworld.Front
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      timeout: 5000
      threadmodel_instance_name: tracing_server
    - name: trpc.test.helloworld.Backend
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      timeout: 5000
      threadmodel_instance_name: tracing_server
plugins:
  log:
    level: error
)";

// One span as the debug exporter prints it.
struct Span {
  std::string trace_id, parent_id, id, name, kind;
  std::map<std::string, std::string> attributes;  // key -> "Str(grpc)", "Int(0)", ...
  // The attribute `key`'s printed value, or "" when the span has none.
  std::string Attr(const std::string& key) const {
    auto it = attributes.find(key);
    return it == attributes.end() ? "" : it->second;
  }
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\r')) s.pop_back();
  size_t b = s.find_first_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b);
}

// Every span in the debug exporter's output (its `verbosity: detailed` layout).
std::vector<Span> ParseSpans(const std::string& text) {
  std::vector<Span> spans;
  std::istringstream in(text);
  std::string line;
  bool in_attributes = false;
  while (std::getline(in, line)) {
    if (line.rfind("Span #", 0) == 0) {
      spans.emplace_back();
      in_attributes = false;
      continue;
    }
    if (spans.empty()) continue;
    Span& s = spans.back();
    auto field = [&line](const char* name, std::string* out) {
      std::string prefix = std::string("    ") + name;
      if (line.rfind(prefix, 0) != 0) return false;
      size_t colon = line.find(':', prefix.size());
      if (colon == std::string::npos) return false;
      *out = Trim(line.substr(colon + 1));
      return true;
    };
    if (field("Trace ID", &s.trace_id) || field("Parent ID", &s.parent_id) || field("ID ", &s.id) ||
        field("Name", &s.name) || field("Kind", &s.kind)) {
      continue;
    }
    if (line.rfind("Attributes:", 0) == 0) {
      in_attributes = true;
      continue;
    }
    if (in_attributes && line.rfind("     -> ", 0) == 0) {
      std::string kv = line.substr(8);
      size_t colon = kv.find(": ");
      if (colon != std::string::npos)
        s.attributes[kv.substr(0, colon)] = Trim(kv.substr(colon + 2));
    } else if (in_attributes) {
      in_attributes = false;
    }
  }
  return spans;
}

// The collector, started on a free port, its stdout (the spans) in a file.
class Collector {
 public:
  bool Start(std::string* why) {
    const std::string bin = TRPC_OTELCOL_BINARY;
    if (::access(bin.c_str(), X_OK) != 0) {
      *why =
          "the OpenTelemetry Collector (" + bin + ": run third_party/setup.sh --with-test-tools)";
      return false;
    }
    port_ = trpc::testing::FreeLoopbackPort();
    out_ = ::testing::TempDir() + "otelcol_" + std::to_string(::getpid()) + ".out";
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setenv("OTELCOL_HTTP_PORT", std::to_string(port_).c_str(), 1);
      FILE* o = std::freopen(out_.c_str(), "w", stdout);
      FILE* e = std::freopen("/dev/null", "w", stderr);
      (void)o;
      (void)e;
      ::execl(bin.c_str(), bin.c_str(), ("--config=" + std::string(TRPC_OTELCOL_CONFIG)).c_str(),
              nullptr);
      ::_exit(127);
    }
    // Started when its port accepts (about 40 ms; 10 s at most on a loaded machine).
    for (int i = 0; i < 1000; ++i) {
      if (trpc::testing::LoopbackPortAccepts(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    *why = "the collector did not listen within 10 s";
    return false;
  }
  void Stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (!out_.empty()) std::remove(out_.c_str());
  }
  uint16_t port() const { return port_; }
  std::vector<Span> Spans() const {
    std::ifstream f(out_);
    std::stringstream ss;
    ss << f.rdbuf();
    return ParseSpans(ss.str());
  }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
  std::string out_;
};

// Front: answers with the backend's answer, called over gRPC with the served call's context
// (so its span is the child of this call's). Asynchronous: a merge worker must not block.
class FrontGreeter final : public Greeter {
 public:
  explicit FrontGreeter(std::shared_ptr<GreeterServiceProxy>* backend) : backend_(backend) {}
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    ctx->SetResponse(false);
    auto down = MakeClientContext(ctx);
    (*backend_)->AsyncSayHello(down, *req).Then([ctx, down](Future<HelloReply>&& f) {
      if (f.IsFailed()) {
        ctx->SendUnaryResponse(f.GetException());
      } else {
        ctx->SendUnaryResponse(kSuccStatus, f.GetValue());
      }
    });
    return kSuccStatus;
  }

 private:
  std::shared_ptr<GreeterServiceProxy>* backend_;
};

// Backend: echoes, and remembers the traceparent its handler sees.
class BackendGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr ctx, const HelloRequest* req, HelloReply* rsp) override {
    const TransInfo& info = ctx->GetPbReqTransInfo();
    auto it = info.find("traceparent");
    std::lock_guard lock(mu);
    last_traceparent = it == info.end() ? "" : it->second;
    rsp->set_msg(req->msg());
    return kSuccStatus;
  }
  std::mutex mu;
  std::string last_traceparent;
};

class TracingE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    log::SetLevel(log::Level::kError);
    tracing::RegisterTracingFilters();
    config_ = new Config;
    std::string yaml =
        trpc::testing::ThreadModelYaml({{"tracing_server", 2}, {kClientModel, 1}}) + kServerYaml;
    ASSERT_TRUE(trpc::testing::StartRuntime(yaml, "tracing_e2e_test.yaml", config_));
  }
  static void TearDownTestSuite() {
    tracing::StopTracing();
    runtime::Stop();
    delete config_;
    config_ = nullptr;
  }

  void SetUp() override {
    std::string why;
    if (!collector_.Start(&why)) {
      collector_.Stop();
      TRPC_SKIP_WITHOUT_PEER(why);
    }
    StartTracingTo("http://127.0.0.1:" + std::to_string(collector_.port()) + "/v1/traces");
    backend_greeter_ = std::make_shared<BackendGreeter>();
    server_ = std::make_unique<Server>(config_->server);
    ASSERT_TRUE(server_->RegisterService(kFront, std::make_shared<FrontGreeter>(&backend_)));
    ASSERT_TRUE(server_->RegisterService(kBackend, backend_greeter_));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    NetAddress front, backend;
    ASSERT_TRUE(server_->GetAddress(kFront, &front));
    ASSERT_TRUE(server_->GetAddress(kBackend, &backend));
    backend_ = MakeProxy(kBackend, "grpc", backend);
    front_ = MakeProxy(kFront, "trpc", front);
  }
  void TearDown() override {
    if (front_) front_->Stop();
    if (backend_) backend_->Stop();
    if (server_) server_->Stop();
    collector_.Stop();
  }

  static void StartTracingTo(const std::string& endpoint) {
    tracing::TracingConfig c;
    c.enabled = true;
    c.endpoint = endpoint;
    c.batch_timeout = 20;
    c.export_timeout = 1000;
    std::string err;
    ASSERT_TRUE(tracing::StartTracing(c, "tracing_e2e", &err)) << err;
  }

  std::shared_ptr<GreeterServiceProxy> MakeProxy(const std::string& name,
                                                 const std::string& protocol,
                                                 const NetAddress& addr) {
    ClientServiceConfig c;
    c.name = name;
    c.protocol = protocol;
    c.target = addr.ToString();
    c.timeout = 5000;
    c.filter = {"tracing"};
    auto p = std::make_shared<GreeterServiceProxy>(c, runtime::GetThreadModel(kClientModel));
    std::string err;
    EXPECT_TRUE(p->Init(&err)) << err;
    return p;
  }

  Status Hello(const ClientContextPtr& ctx) {
    HelloRequest req;
    req.set_msg("hi");
    HelloReply rsp;
    return front_->SayHello(ctx, req, &rsp);
  }

  // The spans of `trace_id` once there are `n` of them (10 s at most).
  std::vector<Span> WaitForTrace(const std::string& trace_id, size_t n) {
    std::vector<Span> mine;
    for (int i = 0; i < 500; ++i) {
      mine.clear();
      for (Span& s : collector_.Spans()) {
        if (s.trace_id == trace_id) mine.push_back(std::move(s));
      }
      if (mine.size() >= n) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return mine;
  }

  static Config* config_;
  Collector collector_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<BackendGreeter> backend_greeter_;
  std::shared_ptr<GreeterServiceProxy> backend_;
  std::shared_ptr<GreeterServiceProxy> front_;
};

Config* TracingE2eTest::config_ = nullptr;

// client -> front (trpc) -> backend (gRPC): one trace of four spans, each the parent of the
// next, with OpenTelemetry's RPC attributes.
TEST_F(TracingE2eTest, OneTraceAcrossTrpcAndGrpc) {
  auto ctx = MakeClientContext();
  ASSERT_TRUE(Hello(ctx).OK());
  // The client's own span's context went out in the request: its trace id is the trace's.
  std::string sent = ctx->GetReqTransInfo().at("traceparent");
  ASSERT_EQ(sent.size(), 55u) << sent;
  const std::string trace_id = sent.substr(3, 32);
  std::vector<Span> spans = WaitForTrace(trace_id, 4);
  ASSERT_EQ(spans.size(), 4u) << "trace " << trace_id;
  std::map<std::string, const Span*> by_id;
  for (const Span& s : spans) by_id[s.id] = &s;
  const Span* root = nullptr;
  for (const Span& s : spans) {
    if (s.parent_id.empty()) root = &s;
  }
  ASSERT_NE(root, nullptr);
  // Walk the chain from the root: client, front server, front's client, backend server.
  std::vector<const Span*> chain = {root};
  while (chain.size() < 4) {
    const Span* next = nullptr;
    for (const Span& s : spans) {
      if (s.parent_id == chain.back()->id) next = &s;
    }
    ASSERT_NE(next, nullptr) << "no child of " << chain.back()->id;
    chain.push_back(next);
  }
  const char* kinds[] = {"Client", "Server", "Client", "Server"};
  const char* systems[] = {"Str(trpc)", "Str(trpc)", "Str(grpc)", "Str(grpc)"};
  const char* services[] = {
      "Str(trpc.test.helloworld.Greeter)", "Str(trpc.test.helloworld.Greeter)",
      "Str(trpc.test.helloworld.Greeter)", "Str(trpc.test.helloworld.Greeter)"};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(chain[i]->kind, kinds[i]);
    EXPECT_EQ(chain[i]->name, "trpc.test.helloworld.Greeter/SayHello");
    EXPECT_EQ(chain[i]->Attr("rpc.system"), systems[i]);
    EXPECT_EQ(chain[i]->Attr("rpc.service"), services[i]);
    EXPECT_EQ(chain[i]->Attr("rpc.method"), "Str(SayHello)");
  }
  EXPECT_EQ(chain[3]->Attr("rpc.grpc.status_code"), "Int(0)");
  EXPECT_EQ(chain[1]->Attr("rpc.trpc.ret_code"), "Int(0)");
  EXPECT_EQ(chain[0]->Attr("server.address"), "Str(127.0.0.1)");
  EXPECT_EQ(chain[3]->Attr("network.peer.address"), "Str(127.0.0.1)");
  // The backend's handler sees its own server span's context in the request's trans_info (the
  // filter put it there, in place of the caller's): what its downstream calls would inherit.
  std::lock_guard lock(backend_greeter_->mu);
  EXPECT_EQ(backend_greeter_->last_traceparent, "00-" + trace_id + "-" + chain[3]->id + "-01");
}

// A caller that decided not to sample: no span anywhere, but the decision travels on.
TEST_F(TracingE2eTest, AnUnsampledCallerIsFollowed) {
  const std::string trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto ctx = MakeClientContext();
  ctx->AddReqTransInfo("traceparent", "00-" + trace_id + "-00f067aa0ba902b7-00");
  ASSERT_TRUE(Hello(ctx).OK());
  {
    std::lock_guard lock(backend_greeter_->mu);
    EXPECT_EQ(backend_greeter_->last_traceparent.substr(0, 36), "00-" + trace_id + "-");
    EXPECT_TRUE(backend_greeter_->last_traceparent.ends_with("-00"))
        << backend_greeter_->last_traceparent;
  }
  // A sampled call after it is exported: by then the unsampled one would have been too.
  auto sampled = MakeClientContext();
  ASSERT_TRUE(Hello(sampled).OK());
  std::string id = sampled->GetReqTransInfo().at("traceparent").substr(3, 32);
  EXPECT_EQ(WaitForTrace(id, 4).size(), 4u);
  EXPECT_TRUE(WaitForTrace(trace_id, 0).empty());
}

// A method name of a caller's making (5,000 bytes here) is cut to 256 bytes in the span's
// name: the exporter's queue cannot be made to hold megabytes of names.
TEST_F(TracingE2eTest, LongMethodNamesAreCutInSpans) {
  auto ctx = MakeClientContext();
  ctx->SetFuncName("/trpc.test.helloworld.Greeter/" + std::string(5000, 'x'));
  HelloRequest req;
  HelloReply rsp;
  // (The generated SayHello names its own method: the plain proxy call sends ctx's.)
  EXPECT_FALSE(static_cast<ServiceProxy&>(*front_).UnaryInvoke(ctx, req, &rsp).OK());
  const std::string trace_id = ctx->GetReqTransInfo().at("traceparent").substr(3, 32);
  std::vector<Span> spans = WaitForTrace(trace_id, 1);
  ASSERT_GE(spans.size(), 1u);
  for (const Span& s : spans) {
    EXPECT_LE(s.name.size(), 256u) << s.name.substr(0, 80);
    EXPECT_TRUE(s.name.starts_with("trpc.test.helloworld.Greeter/xxx")) << s.name.substr(0, 80);
  }
}

// The collector gone: calls go on as before, and the spans they make are counted as dropped.
TEST_F(TracingE2eTest, ACollectorThatIsDownCostsOnlyTheSpans) {
  collector_.Stop();
  StartTracingTo("http://127.0.0.1:" + std::to_string(trpc::testing::FreeLoopbackPort()) +
                 "/v1/traces");
  const tracing::TracingStats before = tracing::GetTracingStats();
  for (int i = 0; i < 50; ++i) {
    auto ctx = MakeClientContext();
    ASSERT_TRUE(Hello(ctx).OK());
  }
  tracing::TracingStats after = tracing::GetTracingStats();
  for (int i = 0; i < 200 && after.spans_dropped < 200; ++i) {  // 4 spans per call
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = tracing::GetTracingStats();
  }
  EXPECT_EQ(after.spans_started - before.spans_started, 200u);
  EXPECT_EQ(after.spans_dropped, 200u);  // a new exporter: its counts start at zero
  EXPECT_EQ(after.spans_exported, 0u);
  EXPECT_GE(after.export_failures, 1u);
}

}  // namespace
}  // namespace trpc::test::helloworld
