// An HTTP/2 flood costs its sender, not the other connections of the worker it lands on: one
// worker (TRPC_E2E_THREAD_MODEL=merge, the default, or fiber) serves a gRPC service that a raw
// client floods with empty DATA frames, and a trpc service whose P99 a probe on another
// connection measures while the same flood goes to a sink (a thread that reads and drops it) and
// then while it goes to the server. Both runs load the machine alike (the flooder, and a reader
// of its bytes), so on a small shared test machine the comparison shows what the server does with
// the flood, not how busy the cores were. TRPC_FLOOD_SECONDS (default 2) sets how long each run
// lasts.

#include <gtest/gtest.h>
#include <poll.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/hedging_check.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/e2e/raw_h2_client.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"

namespace trpc::test::grpc_flood {
namespace {

using namespace raw_h2;  // NOLINT: the raw client's frames and helpers, throughout
using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::GreeterServiceProxy;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

class EchoGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    rsp->set_msg(req->msg());
    return kSuccStatus;
  }
};

using trpc::testing::FiberModel;

// Accepts connections on a loopback port and reads and drops what comes, until destroyed.
class Sink {
 public:
  Sink() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    socklen_t len = sizeof(sa);
    EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&sa), len), 0);
    EXPECT_EQ(listen(fd_, 16), 0);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    EXPECT_TRUE(NetAddress::Parse("127.0.0.1:" + std::to_string(ntohs(sa.sin_port)), &addr_));
    thread_ = std::thread([this] {
      char buf[65536];
      int conn = -1;
      while (!stop_.load()) {
        pollfd p{conn < 0 ? fd_ : conn, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) continue;
        if (conn < 0) {
          conn = accept(fd_, nullptr, nullptr);
        } else if (recv(conn, buf, sizeof(buf), 0) <= 0) {
          close(conn);
          conn = -1;
        }
      }
      if (conn >= 0) close(conn);
    });
  }
  ~Sink() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  const NetAddress& addr() const { return addr_; }

 private:
  int fd_ = -1;
  NetAddress addr_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Floods `target` with empty DATA frames from a thread until destroyed. It ignores GOAWAY and
// writes until the socket is closed, then connects again. The first connection's GOAWAY code is
// kept.
class Flooder {
 public:
  explicit Flooder(const NetAddress& target) {
    thread_ = std::thread([this, target] {
      std::string flood;
      for (int i = 0; i < 7000; ++i) flood += Frame(kData, 0, 1, "");  // 63 KB
      while (!stop_.load()) {
        RawH2 raw(target);
        bool ok = raw.Send(Frame(kHeaders, kEndHeaders, 1, RequestHeaders()) + flood);
        if (++connections_ == 1) {
          uint32_t code = 0;
          if (HasGoaway(raw.ReadUntil(500, [](const RawFrame& f) { return f.type == kGoaway; }),
                        &code)) {
            first_goaway_ = code;
          }
        }
        while (ok && !stop_.load()) ok = raw.Send(flood);
      }
    });
  }
  ~Flooder() {
    stop_ = true;
    thread_.join();
  }
  int connections() const { return connections_.load(); }
  uint32_t first_goaway() const { return first_goaway_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::atomic<uint32_t> first_goaway_{0};
  std::thread thread_;
};

double FloodSeconds() {
  const char* s = std::getenv("TRPC_FLOOD_SECONDS");
  return s != nullptr ? std::atof(s) : 2.0;
}

TEST(GrpcFloodE2eTest, EmptyDataFloodIsCutAndOthersKeepTheirP99) {
  std::string yaml = trpc::testing::ThreadModelYaml({{"flood", 1}}) + R"(server:
  service:
    - name: flooded
      protocol: grpc
      ip: 127.0.0.1
      port: 0
    - name: probe
      protocol: trpc
      ip: 127.0.0.1
      port: 0
)";
  Config config;
  std::string err;
  trpc::testing::ScopedRuntime scoped_runtime;
  ASSERT_TRUE(scoped_runtime.Start(yaml, "grpc_flood.yaml", &config));
  {
    Server server(config.server);
    auto greeter = std::make_shared<EchoGreeter>();
    ASSERT_TRUE(server.RegisterService("flooded", greeter));
    ASSERT_TRUE(server.RegisterService("probe", greeter));
    ASSERT_TRUE(server.Start(&err)) << err;
    NetAddress flooded, probe;
    ASSERT_TRUE(server.GetAddress("flooded", &flooded));
    ASSERT_TRUE(server.GetAddress("probe", &probe));
    SetTrpcClient(std::make_shared<TrpcClient>(ClientConfig{}));
    ClientServiceConfig c;
    c.target = probe.ToString();
    c.timeout = 5000;
    auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>("grpc_flood_probe", c, &err);
    ASSERT_NE(proxy, nullptr) << err;
    auto call = [&] {
      HelloRequest req;
      req.set_msg("probe");
      HelloReply rsp;
      return proxy->SayHello(MakeClientContext(), req, &rsp).OK();
    };
    P99Ms(200, call);  // warm up

    double per_call_s = 0;
    auto while_sunk = [&](int n) {
      Sink sink;
      Flooder flooder(sink.addr());
      const int64_t t0 = MonotonicNanos();
      const double p99 = P99Ms(n, call);
      per_call_s = static_cast<double>(MonotonicNanos() - t0) / 1e9 / n;
      return p99;
    };
    while_sunk(2000);  // how long a call takes under that load: the runs last about as asked
    const int calls = std::max(2000, static_cast<int>(FloodSeconds() / per_call_s));
    // 2x, plus 2 ms for a shared test machine's scheduling noise and 4 ms under a sanitizer,
    // which slows every step several times. Without the flood limits the probe's P99 was
    // several times the bound.
#ifdef TRPC_E2E_SANITIZED
    constexpr double kNoiseMs = 4.0;
#else
    constexpr double kNoiseMs = 2.0;
#endif
    // The two runs of a pair are seconds apart, and other work on a loaded machine can start
    // or stop between them: a pair is measured again, up to kRounds times, and one pair within
    // the bound passes. A server that lets the flood through fails every pair alike.
    constexpr int kRounds = 3;
    bool within = false;
    for (int round = 1; round <= kRounds && !within; ++round) {
      const double before = while_sunk(calls);
      double during = 0;
      int connections = 0;
      uint32_t goaway = 0;
      {
        Flooder flooder(flooded);
        during = P99Ms(calls, call);
        connections = flooder.connections();
        goaway = flooder.first_goaway();
      }
      std::printf(
          "probe P99: %.3f ms with the flood sent to a sink, %.3f ms with it sent to the "
          "server (%.1f s, %d calls, %d flooding connections, %s model, round %d)\n",
          before, during, FloodSeconds(), calls, connections, FiberModel() ? "fiber" : "merge",
          round);
      EXPECT_EQ(goaway, 0xbu);  // ENHANCE_YOUR_CALM
      within = during < 2 * before + kNoiseMs;
      if (!within) {
        std::printf("round %d: %.3f ms is not below %.3f ms\n", round, during,
                    2 * before + kNoiseMs);
      }
    }
    EXPECT_TRUE(within) << "the probe's P99 with the flood exceeded 2x its P99 with the flood "
                           "sent to a sink, plus "
                        << kNoiseMs << " ms, in each of " << kRounds << " rounds";
    SetTrpcClient(nullptr)->Stop();
    server.Stop();
  }
  scoped_runtime.Stop();
}

}  // namespace
}  // namespace trpc::test::grpc_flood
