// trpc server streams end to end, in the thread model TRPC_E2E_THREAD_MODEL names (blocking
// handlers in the fiber model, non-blocking ones in the merged model), driven by a client that
// writes the stream frames by hand: the memory a writer holds when its reader stops, the ends
// (client reset, lost connection), admission (max_concurrency held for a stream's life), the
// refusals, and the peer's protocol errors, with the other connections still served.
// tRPC-Go's own stream client is in test/trpcgo_interop.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "test/common/stream_echo.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/common/wait_for.h"
#include "test/e2e/rpc_e2e_wire.h"
#include "trpc/client/service_proxy.h"
#include "trpc/codec/trpc/detail/stream_frame.h"
#include "trpc/config/config.h"
#include "trpc/future/loop.h"
#include "trpc/server/make_client_context.h"
#include "trpc/server/server.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::test::helloworld {
namespace {

using detail::TrpcStreamFrame;
using detail::TrpcStreamFrameType;
using ::testing::HasSubstr;
using trpc::testing::FiberModel;
using trpc::testing::WaitFor;

constexpr char kPrefix[] = "/trpc.test.helloworld.Greeter/";
constexpr uint32_t kWindow = 131072;       // what the server reads with (stream_window below)
constexpr uint32_t kClientWindow = 65535;  // what our hand-written client reads with

// What the handlers saw.
std::atomic<int> g_active{0};       // stream handlers running
std::atomic<int> g_writes_done{0};  // replies Write() took, of the current stream
std::atomic<int> g_last_ret{-1};    // the framework code a handler's read or write ended with
// Relay: the proxy its downstream stream goes through, and the code that stream ended with.
std::shared_ptr<ServiceProxy> g_relay_proxy;
std::atomic<int> g_relay_down_ret{-1};

// Greeter's streams: ServerStream("N:S") writes N replies of S bytes; BidiStream echoes; Hold
// (bidi) reads until the stream ends and records how. Blocking forms in the fiber model,
// non-blocking ones in the merged model.
class StreamGreeter final : public Greeter {
 public:
  StreamGreeter() {
    const std::string p = kPrefix;
    if (FiberModel()) {
      AddServerStreamMethod<HelloRequest, HelloReply>(
          p + "ServerStream", [](const ServerContextPtr&, const HelloRequest& req,
                                 stream::StreamWriter<HelloReply>* w) {
            Active active;
            auto [n, size] = Spec(req.msg());
            for (int i = 0; i < n; ++i) {
              Status st = w->Write(Reply(size));
              if (!st.OK()) return Record(st);
              g_writes_done.fetch_add(1);
            }
            return kSuccStatus;
          });
      AddBidiStreamMethod<HelloRequest, HelloReply>(
          p + "BidiStream", [](const ServerContextPtr&, const stream::StreamReader<HelloRequest>& r,
                               stream::StreamWriter<HelloReply>* w) {
            Active active;
            for (;;) {
              HelloRequest req;
              Status st = r.Read(&req);
              if (st.StreamEof()) return kSuccStatus;
              if (!st.OK()) return Record(st);
              HelloReply rsp;
              rsp.set_msg(req.msg());
              if (st = w->Write(rsp); !st.OK()) return Record(st);
            }
          });
    } else {
      AddAsyncServerStreamMethod<HelloRequest, HelloReply>(
          p + "ServerStream", [](const ServerContextPtr&, const HelloRequest& req,
                                 const stream::AsyncStreamWriter<HelloReply>& w) {
            auto active = std::make_shared<Active>();
            auto [n, size] = Spec(req.msg());
            return WriteN(w, n, size).Then([active](Future<>&& f) {
              if (f.IsFailed()) Record(f.GetException());
              return std::move(f);
            });
          });
      AddAsyncBidiStreamMethod<HelloRequest, HelloReply>(
          p + "BidiStream",
          [](const ServerContextPtr&,
             const stream::AsyncStreamReaderWriter<HelloRequest, HelloReply>& rw) {
            auto active = std::make_shared<Active>();
            return trpc::testing::EchoEachMessage(rw).Then([active](Future<>&& f) {
              if (f.IsFailed()) Record(f.GetException());
              return std::move(f);
            });
          });
    }
  }

  // Relay (bidi, non-blocking in both models): opens a BidiStream on g_relay_proxy with a
  // context made from its own, relays one round, then waits on the downstream stream until it
  // ends, and records how.
  void AddRelay() {
    AddAsyncBidiStreamMethod<HelloRequest, HelloReply>(
        std::string(kPrefix) + "Relay",
        [](const ServerContextPtr& ctx,
           const stream::AsyncStreamReaderWriter<HelloRequest, HelloReply>& rw) {
          auto active = std::make_shared<Active>();
          ClientContextPtr down_ctx = MakeClientContext(ctx);
          down_ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
          return g_relay_proxy->AsyncOpenStream(down_ctx).Then([rw, active](
                                                                   stream::ClientStream&& opened) {
            stream::AsyncClientReaderWriter<HelloRequest, HelloReply> down(opened);
            HelloRequest req;
            req.set_msg("relayed");
            return down.Write(req)
                .Then([down] { return down.Read(); })
                .Then([rw](std::optional<HelloReply>&& echo) {
                  HelloReply rsp;
                  rsp.set_msg(echo.has_value() ? echo->msg() : "none");
                  return rw.Write(rsp);
                })
                .Then([down] { return down.Read(); })  // pending until the stream ends
                .Then([down, active](Future<std::optional<HelloReply>>&& f) {
                  g_relay_down_ret.store(f.IsFailed() ? f.GetException().GetFrameworkRetCode() : 0);
                  return MakeReadyFuture<>();
                });
          });
        });
  }

  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return kSuccStatus;
  }

 private:
  struct Active {
    Active() { g_active.fetch_add(1); }
    ~Active() { g_active.fetch_sub(1); }
  };
  static std::pair<int, size_t> Spec(const std::string& s) {
    size_t colon = s.find(':');
    if (colon == std::string::npos) return {1, 0};
    return {std::stoi(s.substr(0, colon)), std::stoul(s.substr(colon + 1))};
  }
  static HelloReply Reply(size_t size) {
    HelloReply rsp;
    rsp.set_msg(std::string(size, 'r'));
    return rsp;
  }
  static Status Record(const Status& st) {
    g_last_ret.store(st.GetFrameworkRetCode());
    return st;
  }
  // DoWhile loops: the stack stays flat however long the stream.
  static Future<> WriteN(stream::AsyncStreamWriter<HelloReply> w, int n, size_t size) {
    auto left = std::make_shared<int>(n);
    return DoWhile([w, left, size] {
      if (*left == 0) return MakeReadyFuture<bool>(false);
      --*left;
      return w.Write(Reply(size)).Then([] {
        g_writes_done.fetch_add(1);
        return true;
      });
    });
  }
};

constexpr char kServerYaml[] = R"(server:
  app: test
  server: stream_e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      network: tcp
      ip: 127.0.0.1
      port: 0
      max_packet_size: 10000000
      max_concurrency: 8
      stream_window: 131072
      threadmodel_instance_name: stream_server
plugins:
  log:
    level: error
)";

// A stream client by hand, on one raw connection.
class StreamClient {
 public:
  explicit StreamClient(const NetAddress& server) : conn_(server) {}
  bool ok() const { return conn_.ok(); }
  RawConnection& conn() { return conn_; }

  bool Init(uint32_t id, const std::string& method, uint32_t window = kClientWindow) {
    detail::TrpcStreamInit init;
    init.callee = kGreeterName;
    init.func = kPrefix + method;
    init.init_window_size = window;
    return Put([&](ChainBuffer* b, std::string* e) {
      return detail::WriteTrpcStreamInit(id, init, b, e);
    });
  }
  bool Data(uint32_t id, const std::string& msg) {
    HelloRequest req;
    req.set_msg(msg);
    ChainBuffer body;
    body.Append(req.SerializeAsString());
    return Put([&](ChainBuffer* b, std::string* e) {
      return detail::WriteTrpcStreamData(id, std::move(body), b, e);
    });
  }
  bool Feedback(uint32_t id, uint32_t n) {
    return Put([&](ChainBuffer* b, std::string* e) {
      return detail::WriteTrpcStreamFeedback(id, n, b, e);
    });
  }
  bool Close(uint32_t id, bool reset, int32_t ret = 0) {
    detail::TrpcStreamClose c;
    c.close_type = reset ? 1 : 0;
    c.ret = ret;
    return Put(
        [&](ChainBuffer* b, std::string* e) { return detail::WriteTrpcStreamClose(id, c, b, e); });
  }
  // The next frame, decoded; nullopt when the connection closed or nothing came in time.
  std::optional<TrpcStreamFrame> Next(int64_t timeout_ms = kIoTimeoutMs) {
    std::string bytes;
    if (conn_.ReadFrame(&bytes, timeout_ms) != RawConnection::Result::kFrame) return std::nullopt;
    ChainBuffer b;
    b.Append(bytes);
    TrpcStreamFrame f;
    std::string err;
    if (!detail::ReadTrpcStreamFrame(std::move(b), &f, &err)) {
      ADD_FAILURE() << "not a stream frame: " << err;
      return std::nullopt;
    }
    return f;
  }

 private:
  template <typename F>
  bool Put(F&& write) {
    ChainBuffer b;
    std::string err;
    if (!write(&b, &err)) {
      ADD_FAILURE() << err;
      return false;
    }
    return conn_.Send(b.ToString());
  }
  RawConnection conn_;
};

class StreamE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    config_ = new Config;
    ASSERT_TRUE(trpc::testing::StartRuntime(
        trpc::testing::ThreadModelYaml(FiberModel(), {{"stream_server", 2}, {"stream_client", 1}}) +
            kServerYaml,
        "stream_e2e.yaml", config_));
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
  }
  void SetUp() override {
    g_writes_done = 0;
    g_last_ret = -1;
    server_ = std::make_unique<Server>(config_->server);
    auto greeter = std::make_shared<StreamGreeter>();
    greeter->AddRelay();
    ASSERT_TRUE(server_->RegisterService(kGreeterName, greeter));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kGreeterName, &addr_));
  }
  void TearDown() override {
    server_->Stop();
    server_.reset();
    // Every handler has ended: the streams of the closed connections are gone.
    EXPECT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000))
        << g_active.load() << " stream handlers still running";
  }

  // The server's INIT answer to `id`.
  static void ExpectAccepted(StreamClient& c, uint32_t id) {
    auto f = c.Next();
    ASSERT_TRUE(f.has_value());
    EXPECT_EQ(f->type, TrpcStreamFrameType::kInit);
    EXPECT_EQ(f->stream_id, id);
    EXPECT_EQ(f->init.ret, 0) << f->init.error_msg;
    EXPECT_EQ(f->init.init_window_size, kWindow);
  }

  // A unary SayHello on a fresh connection: the server still serves others.
  void ExpectServing() {
    RawConnection c(addr_);
    ASSERT_TRUE(c.Send(EncodeHello(1, "still there")));
    Reply r;
    ASSERT_TRUE(c.ReadReply(&r));
    EXPECT_EQ(r.body.msg(), "Hello, still there");
  }

  static inline Config* config_ = nullptr;
  std::unique_ptr<Server> server_;
  NetAddress addr_;
};

TEST_F(StreamE2eTest, ServerStreamDeliversEveryReplyThenCloses) {
  StreamClient c(addr_);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.Init(100, "ServerStream"));
  ASSERT_TRUE(c.Data(100, "50:3000"));  // 150 KB: the window turns over twice
  ASSERT_TRUE(c.Close(100, false));
  ExpectAccepted(c, 100);
  int replies = 0;
  size_t unacked = 0;
  for (;;) {
    auto f = c.Next();
    ASSERT_TRUE(f.has_value()) << "after " << replies << " replies";
    if (f->type == TrpcStreamFrameType::kClose) {
      EXPECT_EQ(f->close.close_type, 0);
      EXPECT_EQ(f->close.ret, 0);
      break;
    }
    ASSERT_EQ(f->type, TrpcStreamFrameType::kData);
    HelloReply rsp;
    ASSERT_TRUE(rsp.ParseFromString(f->data.ToString()));
    EXPECT_EQ(rsp.msg().size(), 3000u);
    ++replies;
    unacked += f->data.size();
    if (unacked * 4 > kClientWindow) {  // credit back, as a well-behaved reader returns it
      ASSERT_TRUE(c.Feedback(100, static_cast<uint32_t>(unacked)));
      unacked = 0;
    }
  }
  EXPECT_EQ(replies, 50);
}

// A reader that stops: the writer is held to the window plus the writer's constant, not the 64
// MB it offers; credit lets it go on; the client's reset then ends the handler's write.
TEST_F(StreamE2eTest, WriterFacingAStoppedReaderHoldsAtMostTheWindow) {
  StreamClient c(addr_);
  ASSERT_TRUE(c.Init(100, "ServerStream"));
  ASSERT_TRUE(c.Data(100, "1024:65536"));  // 64 MB offered
  ExpectAccepted(c, 100);
  const int64_t msg = 65536 + 4;  // a reply's bytes on the wire
  const int64_t bound = (kClientWindow + detail::StreamCore::kMaxQueuedBytes) / msg + 3;
  ASSERT_TRUE(WaitFor([] { return g_writes_done.load() > 0; }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // time to run ahead, if it could
  const int held = g_writes_done.load();
  EXPECT_LE(held, bound) << "messages taken by Write() while the reader gave no credit";
  // What did reach us is at most the window, plus the one message it may exceed it by.
  int64_t received = 0;
  while (auto f = c.Next(200)) {
    ASSERT_EQ(f->type, TrpcStreamFrameType::kData);
    received += static_cast<int64_t>(f->data.size());
  }
  EXPECT_LE(received, kClientWindow + msg);
  EXPECT_GT(received, 0);
  // Credit lets the writer go on by about as much.
  ASSERT_TRUE(c.Feedback(100, static_cast<uint32_t>(received)));
  ASSERT_TRUE(WaitFor([&] { return g_writes_done.load() > held; }, 5000));
  EXPECT_LE(g_writes_done.load(), held + bound);
  ASSERT_TRUE(c.Close(100, true, kClientCanceledErr));
  ASSERT_TRUE(WaitFor([] { return g_last_ret.load() != -1; }, 5000));
  EXPECT_EQ(g_last_ret.load(), kClientCanceledErr);
  ExpectServing();
}

// A client that announces no window runs no flow control: then the connection's unwritten output
// bounds the writer instead (what the kernel's socket buffers take comes on top: a few MB on
// loopback), and the rest flows once the client reads.
TEST_F(StreamE2eTest, WithoutFlowControlTheConnectionsBacklogBoundsTheWriter) {
  StreamClient c(addr_);
  ASSERT_TRUE(c.Init(100, "ServerStream", /*window=*/0));
  ASSERT_TRUE(c.Data(100, "1024:65536"));  // 64 MB offered
  ASSERT_TRUE(c.Close(100, false));
  ASSERT_TRUE(WaitFor([] { return g_writes_done.load() > 0; }, 5000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int held = g_writes_done.load();
  EXPECT_LT(held, 256) << "64 KB messages taken by Write() while the client read nothing";
  // Reading everything: all 1024 arrive, then the close.
  int replies = 0;
  for (;;) {
    auto f = c.Next();
    ASSERT_TRUE(f.has_value()) << "after " << replies << " replies";
    if (f->type == TrpcStreamFrameType::kInit) continue;
    if (f->type == TrpcStreamFrameType::kClose) break;
    ++replies;
  }
  EXPECT_EQ(replies, 1024);
}

TEST_F(StreamE2eTest, BidiEchoesManyStreamsOnOneConnection) {
  StreamClient c(addr_);
  for (uint32_t id = 100; id < 104; ++id) ASSERT_TRUE(c.Init(id, "BidiStream"));
  for (int round = 0; round < 5; ++round) {
    for (uint32_t id = 100; id < 104; ++id) {
      ASSERT_TRUE(c.Data(id, "m" + std::to_string(id) + "-" + std::to_string(round)));
    }
  }
  for (uint32_t id = 100; id < 104; ++id) ASSERT_TRUE(c.Close(id, false));
  std::map<uint32_t, std::vector<std::string>> echoes;
  int closes = 0;
  while (closes < 4) {
    auto f = c.Next();
    ASSERT_TRUE(f.has_value());
    if (f->type == TrpcStreamFrameType::kInit) {
      EXPECT_EQ(f->init.ret, 0);
    } else if (f->type == TrpcStreamFrameType::kData) {
      HelloReply rsp;
      ASSERT_TRUE(rsp.ParseFromString(f->data.ToString()));
      echoes[f->stream_id].push_back(rsp.msg());
    } else if (f->type == TrpcStreamFrameType::kClose) {
      EXPECT_EQ(f->close.ret, 0);
      ++closes;
    }
  }
  for (uint32_t id = 100; id < 104; ++id) {
    ASSERT_EQ(echoes[id].size(), 5u);
    for (int round = 0; round < 5; ++round) {
      EXPECT_EQ(echoes[id][round], "m" + std::to_string(id) + "-" + std::to_string(round));
    }
  }
}

// A lost connection ends its streams: a handler waiting to read gets ret 201.
TEST_F(StreamE2eTest, LostConnectionEndsTheHandlers) {
  {
    StreamClient c(addr_);
    ASSERT_TRUE(c.Init(100, "BidiStream"));
    ExpectAccepted(c, 100);
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 1; }, 5000));
  }  // closed
  ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000));
  EXPECT_EQ(g_last_ret.load(), kStreamServerNetworkErr);
}

// stream_idle_timeout and stream_timeout: a stream with no message either way for the idle time
// is reset with ret 21, both ends seeing it; one that keeps talking lives until its total time.
TEST_F(StreamE2eTest, IdleAndTotalTimeoutsResetTheStream) {
  ServerConfig cfg = config_->server;
  cfg.service[0].stream_idle_timeout = 150;
  cfg.service[0].stream_timeout = 600;
  server_->Stop();
  server_ = std::make_unique<Server>(cfg);
  ASSERT_TRUE(server_->RegisterService(kGreeterName, std::make_shared<StreamGreeter>()));
  std::string err;
  ASSERT_TRUE(server_->Start(&err)) << err;
  ASSERT_TRUE(server_->GetAddress(kGreeterName, &addr_));
  ClientServiceConfig c;
  c.name = kGreeterName;
  c.target = addr_.ToString();
  c.protocol = "trpc";
  auto proxy = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel("stream_client"));
  ASSERT_TRUE(proxy->Init(&err)) << err;
  auto open = [&] {
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
    stream::ClientStream s;
    EXPECT_TRUE(proxy->OpenStream(ctx, &s).OK()) << ctx->GetStatus().ToString();
    return s;
  };
  {  // idle: one round, then silence
    stream::ClientStream s = open();
    HelloRequest req;
    req.set_msg("one");
    ASSERT_TRUE(s.Write(req).OK());
    HelloReply rsp;
    ASSERT_TRUE(s.Read(&rsp, 5000).OK());
    const auto quiet = std::chrono::steady_clock::now();
    Status st = s.Read(&rsp, 5000);
    const auto waited = std::chrono::steady_clock::now() - quiet;
    EXPECT_FALSE(st.OK());
    EXPECT_EQ(s.Finish().GetFrameworkRetCode(), kServerTimeoutErr) << s.Finish().ToString();
    EXPECT_GE(waited, std::chrono::milliseconds(140));
    EXPECT_LT(waited, std::chrono::milliseconds(3000));
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000));
    EXPECT_EQ(g_last_ret.load(), kServerTimeoutErr);
  }
  {  // busy: a round every 50 ms is never idle, but the stream's total time runs out
    stream::ClientStream s = open();
    const auto start = std::chrono::steady_clock::now();
    int rounds = 0;
    Status st;
    for (; rounds < 100; ++rounds) {  // (100 rounds: 5 s, far past the limit)
      HelloRequest req;
      req.set_msg("tick");
      HelloReply rsp;
      if (!s.Write(req).OK() || !(st = s.Read(&rsp, 5000)).OK()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    const auto lived = std::chrono::steady_clock::now() - start;
    EXPECT_GE(rounds, 5);  // idle never struck
    EXPECT_GE(lived, std::chrono::milliseconds(590));
    EXPECT_LT(lived, std::chrono::milliseconds(4000));
    EXPECT_EQ(s.Finish().GetFrameworkRetCode(), kServerTimeoutErr) << s.Finish().ToString();
  }
}

// A client cancels a stream whose handler opened a stream downstream with a context made from
// its own (MakeClientContext): the downstream stream is reset too, and its handler sees the
// cancel. A stream that ends normally cancels nothing (the other tests).
TEST_F(StreamE2eTest, CancellingAStreamResetsTheStreamsOpenedFromItsContext) {
  ClientServiceConfig c;
  c.name = kGreeterName;
  c.target = addr_.ToString();
  c.protocol = "trpc";
  auto proxy = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel("stream_client"));
  std::string err;
  ASSERT_TRUE(proxy->Init(&err)) << err;
  g_relay_proxy = proxy;
  g_relay_down_ret = -1;
  {
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "Relay");
    stream::ClientStream s;
    ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK()) << ctx->GetStatus().ToString();
    HelloRequest req;
    req.set_msg("go");
    ASSERT_TRUE(s.Write(req).OK());
    HelloReply rsp;
    ASSERT_TRUE(s.Read(&rsp, 5000).OK());
    EXPECT_EQ(rsp.msg(), "relayed");  // the downstream stream is open and echoed
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 2; }, 5000))  // Relay and BidiStream
        << g_active.load();
    g_last_ret = -1;
    s.Cancel();
  }
  ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000)) << g_active.load();
  EXPECT_EQ(g_last_ret.load(), kClientCanceledErr);  // the downstream handler saw the cancel
  EXPECT_EQ(g_relay_down_ret.load(), kClientCanceledErr);
  g_relay_proxy.reset();
}

// max_concurrency (8 here) holds for a stream's whole life: the ninth open is refused with 22,
// and taken again once one has ended. (Opened one at a time: the merged model also counts what
// one read pass admits, scaled to all workers.)
TEST_F(StreamE2eTest, OpenStreamsHoldMaxConcurrency) {
  StreamClient c(addr_);
  for (uint32_t id = 100; id < 108; ++id) {
    ASSERT_TRUE(c.Init(id, "BidiStream"));
    ExpectAccepted(c, id);
  }
  ASSERT_TRUE(c.Init(108, "BidiStream"));
  auto f = c.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->type, TrpcStreamFrameType::kInit);
  EXPECT_EQ(f->init.ret, kServerOverloadErr);
  ASSERT_TRUE(c.Close(100, false));
  f = c.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->type, TrpcStreamFrameType::kClose);
  ASSERT_TRUE(WaitFor([] { return g_active.load() == 7; }, 5000));
  ASSERT_TRUE(c.Init(109, "BidiStream"));
  ExpectAccepted(c, 109);
}

TEST_F(StreamE2eTest, WrongKindsOfCallAreRefused) {
  StreamClient c(addr_);
  ASSERT_TRUE(c.Init(100, "SayHello"));  // a unary method opened as a stream
  auto f = c.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->init.ret, kServerNoFuncErr);
  EXPECT_THAT(f->init.error_msg, HasSubstr("no such streaming method"));
  ASSERT_TRUE(c.Init(101, "NoSuchMethod"));
  f = c.Next();
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->init.ret, kServerNoFuncErr);
  // A stream method called as a unary one.
  RpcRequest req;
  req.request_id = 7;
  req.func = std::string(kPrefix) + "BidiStream";
  ChainBuffer out;
  HelloRequest body;
  ASSERT_TRUE(TrpcClientCodec()->EncodeRequest(&req, &body, &out));
  ASSERT_TRUE(c.conn().Send(out.ToString()));
  Reply r;
  ASSERT_TRUE(c.conn().ReadReply(&r));
  EXPECT_EQ(r.rsp.ret, kServerNoFuncErr);
  EXPECT_THAT(r.rsp.error_msg, HasSubstr("is a streaming method"));
}

// The peer's errors that make a connection untrustworthy close it, with the others served.
TEST_F(StreamE2eTest, ProtocolErrorsCloseTheConnectionOnly) {
  {
    StreamClient c(addr_);
    ASSERT_TRUE(c.Data(100, "no INIT came first"));
    std::string rest;
    EXPECT_TRUE(c.conn().WaitClosed(5000, &rest));
  }
  {
    StreamClient c(addr_);
    ASSERT_TRUE(c.Init(100, "BidiStream"));
    ExpectAccepted(c, 100);
    ASSERT_TRUE(c.Init(100, "BidiStream"));  // a second INIT for an open stream
    std::string rest;
    EXPECT_TRUE(c.conn().WaitClosed(5000, &rest));
  }
  {
    StreamClient c(addr_);
    std::string frame(16, '\0');  // a stream frame of an unknown type
    frame[0] = 0x09;
    frame[1] = 0x30;
    frame[2] = 1;
    frame[3] = 9;
    PutBe32(16, frame.data() + 4);
    PutBe32(100, frame.data() + 10);
    ASSERT_TRUE(c.conn().Send(frame));
    std::string rest;
    EXPECT_TRUE(c.conn().WaitClosed(5000, &rest));
  }
  ExpectServing();
}

// Our own client's streams against our server (blocking client calls from a plain thread).
TEST_F(StreamE2eTest, OurClientStreamsAgainstOurServer) {
  ClientServiceConfig c;
  c.name = kGreeterName;
  c.target = addr_.ToString();
  c.protocol = "trpc";
  c.timeout = 5000;
  auto proxy = std::make_shared<ServiceProxy>(c, runtime::GetThreadModel("stream_client"));
  std::string err;
  ASSERT_TRUE(proxy->Init(&err)) << err;
  {
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "ServerStream");
    stream::ClientStream s;
    ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK()) << ctx->GetStatus().ToString();
    HelloRequest req;
    req.set_msg("100:3000");  // 300 KB: the window turns over four times
    ASSERT_TRUE(s.Write(req).OK());
    ASSERT_TRUE(s.WritesDone().OK());
    int n = 0;
    for (HelloReply rsp; s.Read(&rsp, 10'000).OK(); ++n) EXPECT_EQ(rsp.msg().size(), 3000u);
    EXPECT_EQ(n, 100);
    EXPECT_TRUE(s.Finish().OK());
  }
  {
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
    stream::ClientStream s;
    ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK()) << ctx->GetStatus().ToString();
    for (int i = 0; i < 100; ++i) {
      HelloRequest req;
      req.set_msg(std::string(1000 + i, 'b'));
      ASSERT_TRUE(s.Write(req).OK());
      HelloReply rsp;
      ASSERT_TRUE(s.Read(&rsp, 10'000).OK());
      EXPECT_EQ(rsp.msg(), req.msg());
    }
    EXPECT_TRUE(s.Finish().OK());
  }
  {  // the client gives up: the server's handler ends with the cancel's code
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
    stream::ClientStream s;
    ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK());
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 1; }, 5000));
    s.Cancel();
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000));
    EXPECT_EQ(g_last_ret.load(), kClientCanceledErr);
    HelloRequest req;
    EXPECT_FALSE(s.Write(req).OK());
  }
  {  // the client drops its last handle of an open stream: cancelled as by Cancel()
    g_last_ret = -1;
    {
      ClientContextPtr ctx = MakeClientContext();
      ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
      stream::ClientStream s;
      ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK());
      stream::ClientStream copy = s;  // (a copy is the same stream: both go)
      HelloRequest req;
      req.set_msg("hi");
      ASSERT_TRUE(copy.Write(req).OK());
      ASSERT_TRUE(WaitFor([] { return g_active.load() == 1; }, 5000));
    }
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000));
    EXPECT_EQ(g_last_ret.load(), kClientCanceledErr);
  }
  {  // a stream finished properly and then dropped is not cancelled
    g_last_ret = -1;
    {
      ClientContextPtr ctx = MakeClientContext();
      ctx->SetFuncName(std::string(kPrefix) + "BidiStream");
      stream::ClientStream s;
      ASSERT_TRUE(proxy->OpenStream(ctx, &s).OK());
      EXPECT_TRUE(s.Finish().OK());
    }
    ASSERT_TRUE(WaitFor([] { return g_active.load() == 0; }, 5000));
    EXPECT_EQ(g_last_ret.load(), -1);  // the handler ended with success (not recorded)
  }
  {  // refused: a unary method
    ClientContextPtr ctx = MakeClientContext();
    ctx->SetFuncName(std::string(kPrefix) + "SayHello");
    stream::ClientStream s;
    Status st = proxy->OpenStream(ctx, &s);
    EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr) << st.ToString();
  }
  proxy->Stop();
}

}  // namespace
}  // namespace trpc::test::helloworld
