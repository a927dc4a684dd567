// End-to-end tests of the trpc protocol over loopback: a Server serving Greeter, called through a
// ServiceProxy and through raw sockets that send what a well-behaved client never would. The
// same tests run in each thread model, chosen by config alone: TRPC_E2E_THREAD_MODEL=merge
// (default) or fiber picks the YAML (ctest runs both).

#include <errno.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/client/service_proxy.h"
#include "trpc/codec/codec.h"
#include "trpc/config/config.h"
#include "trpc/fiber/fiber.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/detail/service_adapter.h"
#include "trpc/server/server.h"

namespace trpc::test::helloworld {
namespace {

using ::testing::HasSubstr;

constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
constexpr char kSayHelloFunc[] = "/trpc.test.helloworld.Greeter/SayHello";

constexpr char kClientModel[] = "e2e_client";
constexpr int64_t kIoTimeoutMs = 10'000;  // bound on any single wait for the server

// Two thread-model instances: the server's (2 workers) and the client's (1 worker, so a proxy
// with one backend uses exactly one connection).
constexpr char kMergeModels[] = R"(global:
  threadmodel:
    default:
      - instance_name: e2e_server
        io_handle_type: merge
        io_thread_num: 2
      - instance_name: e2e_client
        io_handle_type: merge
        io_thread_num: 1
)";
constexpr char kFiberModels[] = R"(global:
  threadmodel:
    fiber:
      - instance_name: e2e_server
        concurrency_hint: 2
        fiber_stack_size: 131072
      - instance_name: e2e_client
        concurrency_hint: 1
)";
constexpr char kServerYaml[] = R"(server:
  app: test
  server: e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      network: tcp
      ip: 127.0.0.1
      port: 0
      max_conn_num: 100
      idle_time: 60000
      max_packet_size: 10000000
      timeout: 1000
      threadmodel_instance_name: e2e_server
plugins:
  log:
    level: warn
)";

bool FiberModel() {
  const char* m = std::getenv("TRPC_E2E_THREAD_MODEL");
  return m != nullptr && std::string_view(m) == "fiber";
}
std::string ConfigYaml() {
  return std::string(FiberModel() ? kFiberModels : kMergeModels) + kServerYaml;
}

// ---------------------------------------------------------------------------------------------
// The service under test.

std::atomic<int> g_count{0};            // "count" requests handled
std::atomic<int> g_sleeps_started{0};   // "sleep:N" handlers that have begun
std::atomic<int> g_sleeps_finished{0};  // "sleep:N" handlers that have returned

// SayHello by message: "throw" throws; "sleep:N" sleeps N ms (a fiber sleep in the fiber model,
// which parks only the handler's fiber; a thread sleep in the merge model); "sleep:N:big:M" sleeps
// N ms, then replies with M bytes of 'x'; "count" bumps g_count; "big:N" replies with N bytes of
// 'x'; "app_error" answers Status::AppError(-404, ...); "framework_ret" answers Status(-404, ...)
// (a framework code no caller knows);
// everything else (and sleep/count) replies "Hello, " + msg.
class TestGreeter final : public Greeter {
 public:
  Status SayHello(ServerContextPtr, const HelloRequest* req, HelloReply* rsp) override {
    const std::string& msg = req->msg();
    if (msg == "throw") throw std::runtime_error("the handler threw on purpose");
    if (msg == "app_error") return Status::AppError(-404, "no such greeting");
    if (msg == "framework_ret") return Status(-404, "no such greeting");
    if (msg.starts_with("big:")) {
      rsp->set_msg(std::string(std::stoul(msg.substr(4)), 'x'));
      return kSuccStatus;
    }
    if (msg.starts_with("block:")) {  // holds the worker thread in either model
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(msg.substr(6))));
    } else if (msg.starts_with("sleep:")) {
      g_sleeps_started.fetch_add(1);
      fiber::this_fiber::SleepFor(std::chrono::milliseconds(std::stoi(msg.substr(6))));
      g_sleeps_finished.fetch_add(1);
      if (size_t big = msg.find(":big:"); big != std::string::npos) {
        rsp->set_msg(std::string(std::stoul(msg.substr(big + 5)), 'x'));
        return kSuccStatus;
      }
    } else if (msg == "count") {
      g_count.fetch_add(1);
    }
    rsp->set_msg("Hello, " + msg);
    return kSuccStatus;
  }
};

// ---------------------------------------------------------------------------------------------
// Raw wire helpers (docs/protocol.md).

constexpr size_t kFixedHeaderSize = 16;

void PutBe16(uint16_t v, char* p) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
void PutBe32(uint32_t v, char* p) {
  PutBe16(static_cast<uint16_t>(v >> 16), p);
  PutBe16(static_cast<uint16_t>(v), p + 2);
}
uint32_t GetBe32(const char* p) {
  auto b = [p](int i) { return static_cast<uint32_t>(static_cast<unsigned char>(p[i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

// A hand-made fixed header: magic, unary frame types, total size, header size, stream id 0.
std::string FixedHeader(uint16_t magic, uint32_t total, uint16_t header_size) {
  std::string h(kFixedHeaderSize, '\0');
  PutBe16(magic, h.data());
  PutBe32(total, h.data() + 4);
  PutBe16(header_size, h.data() + 8);
  return h;
}

std::shared_ptr<ClientCodec> TrpcClientCodec() {
  return CodecRegistry::Instance().GetClient("trpc");
}

// One SayHello request frame, encoded by the framework's own trpc client codec.
std::string EncodeHello(uint32_t request_id, const std::string& msg, uint32_t timeout_ms = 5000,
                        uint32_t call_type = kUnaryCall, uint32_t content_encoding = 0) {
  RpcRequest req;
  req.call_type = call_type;
  req.content_encoding = content_encoding;
  req.request_id = request_id;
  req.timeout_ms = timeout_ms;
  req.callee = kGreeterName;
  req.func = kSayHelloFunc;
  HelloRequest body;
  body.set_msg(msg);
  ChainBuffer out;
  auto codec = TrpcClientCodec();
  if (!codec || !codec->EncodeRequest(&req, &body, &out)) {
    ADD_FAILURE() << "cannot encode a request";
    return {};
  }
  return out.ToString();
}

struct Reply {
  RpcResponse rsp;
  HelloReply body;
};

// Decodes one response frame (and its HelloReply body when ret is 0).
::testing::AssertionResult DecodeReply(const std::string& frame, Reply* out) {
  ChainBuffer buf;
  buf.Append(frame);
  std::string err;
  if (!TrpcClientCodec()->DecodeResponse(std::move(buf), &out->rsp, &err)) {
    return ::testing::AssertionFailure() << "undecodable response: " << err;
  }
  if (out->rsp.ret == 0 && out->rsp.func_ret == 0 &&
      !out->body.ParseFromString(out->rsp.body.ToString())) {
    return ::testing::AssertionFailure() << "response body is not a HelloReply";
  }
  return ::testing::AssertionSuccess();
}

// A plain TCP client of the server under test, for byte sequences the proxy would never send.
// Writes block; every read is bounded by poll() with a deadline.
class RawConnection {
 public:
  enum class Result { kFrame, kClosed, kTimeout };

  explicit RawConnection(const NetAddress& server) {
    fd_ = ::socket(server.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ >= 0 && ::connect(fd_, server.sockaddr_ptr(), server.length()) != 0) Close();
  }
  ~RawConnection() { Close(); }
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  /// Writes all of `bytes`. False if the server has closed the connection.
  bool Send(std::string_view bytes) {
    while (!bytes.empty()) {
      ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  /// Reads one whole frame (sized by its fixed header).
  Result ReadFrame(std::string* frame, int64_t timeout_ms = kIoTimeoutMs) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    while (!CutFrame(frame)) {
      Result r = Fill(deadline);
      if (r != Result::kFrame) return r;
    }
    return Result::kFrame;
  }

  /// Reads one frame and decodes it as a SayHello response.
  ::testing::AssertionResult ReadReply(Reply* reply, int64_t timeout_ms = kIoTimeoutMs) {
    std::string frame;
    Result r = ReadFrame(&frame, timeout_ms);
    if (r != Result::kFrame) {
      return ::testing::AssertionFailure()
             << (r == Result::kClosed ? "connection closed" : "timed out")
             << " waiting for a reply";
    }
    return DecodeReply(frame, reply);
  }

  /// Waits until the server closes the connection (EOF or reset); bytes that arrive first are
  /// appended to `*received`. False if it is still open after `timeout_ms`.
  bool WaitClosed(int64_t timeout_ms, std::string* received) {
    int64_t deadline = MonotonicMillis() + timeout_ms;
    for (;;) {
      Result r = Fill(deadline);
      if (r == Result::kClosed) break;
      if (r == Result::kTimeout) return false;
    }
    received->append(in_, pos_);
    in_.clear();
    pos_ = 0;
    return true;
  }

  /// Moves the first complete buffered frame to `*frame`; false if none is complete.
  bool CutFrame(std::string* frame) {
    size_t avail = in_.size() - pos_;
    if (avail < kFixedHeaderSize) return false;
    size_t total = GetBe32(in_.data() + pos_ + 4);
    if (total < kFixedHeaderSize || avail < total) return false;
    frame->assign(in_, pos_, total);
    pos_ += total;
    if (pos_ == in_.size()) {
      in_.clear();
      pos_ = 0;
    } else if (pos_ > (1u << 20)) {
      in_.erase(0, pos_);
      pos_ = 0;
    }
    return true;
  }

  /// Waits (until `deadline_ms`) for bytes and buffers what is available: kFrame means "got
  /// some bytes".
  Result Fill(int64_t deadline_ms) {
    for (;;) {
      int64_t left = deadline_ms - MonotonicMillis();
      if (left < 0) return Result::kTimeout;
      pollfd pfd{fd_, POLLIN, 0};
      int r = ::poll(&pfd, 1, static_cast<int>(left));
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return Result::kTimeout;
      char buf[256 * 1024];
      ssize_t n = ::recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        in_.append(buf, static_cast<size_t>(n));
        return Result::kFrame;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) return Result::kClosed;
    }
  }

 private:
  int fd_ = -1;
  std::string in_;
  size_t pos_ = 0;
};

// Polls `pred` until it holds or `timeout_ms` passes; returns its final value.
template <typename Pred>
bool WaitFor(Pred pred, int64_t timeout_ms = kIoTimeoutMs) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  while (!pred()) {
    if (MonotonicMillis() > deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Letters in a position-dependent order (a proto3 string must be valid UTF-8).
std::string Letters(size_t n) {
  std::string s(n, 'a');
  uint32_t x = 7;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    s[i] = static_cast<char>('a' + (x >> 24) % 26);
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// Fixture: the runtime lives for the whole suite; each test starts its own server (so it can
// change the service's limits) and a proxy to it.

class RpcE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string err;
    config_ = new Config;
    ASSERT_TRUE(LoadConfigFromString(ConfigYaml(), "rpc_e2e_test.yaml", config_, &err)) << err;
    log::Level level;
    if (log::ParseLevel(config_->plugins.log.level, &level)) log::SetLevel(level);
    ASSERT_TRUE(runtime::Start(config_->global.threadmodel, &err)) << err;
  }
  static void TearDownTestSuite() {
    runtime::Stop();
    delete config_;
    config_ = nullptr;
  }

  void TearDown() override {
    if (proxy_) proxy_->Stop();
    proxy_.reset();
    if (server_) server_->Stop();
    server_.reset();
  }

  // Starts a server from the suite's config with its service changed by `tweak`, and a proxy
  // (client model, one backend, its config changed by `client_tweak`) whose target is the
  // server's bound address.
  void StartServer(const std::function<void(ServiceConfig*)>& tweak = {},
                   const std::function<void(ClientServiceConfig*)>& client_tweak = {}) {
    ASSERT_NE(config_, nullptr);
    ServerConfig server_config = config_->server;
    ASSERT_EQ(server_config.service.size(), 1u);
    if (tweak) tweak(&server_config.service[0]);
    server_ = std::make_unique<Server>(server_config);
    ASSERT_TRUE(server_->RegisterService(kGreeterName, std::make_shared<TestGreeter>()));
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    ASSERT_TRUE(server_->GetAddress(kGreeterName, &address_));
    ASSERT_NE(address_.port(), 0);

    ClientServiceConfig client_config;
    client_config.name = kGreeterName;
    client_config.target = address_.ToString();
    client_config.protocol = "trpc";
    client_config.max_packet_size = 16'000'000;  // room for the 10 MB reply
    if (client_tweak) client_tweak(&client_config);
    ThreadModel* model = runtime::GetThreadModel(kClientModel);
    ASSERT_NE(model, nullptr);
    proxy_ = std::make_shared<GreeterServiceProxy>(client_config, model);
    ASSERT_TRUE(proxy_->Init(&err)) << err;
  }

  const detail::ServiceAdapter& adapter() const { return *server_->GetAdapter(kGreeterName); }
  detail::ServiceStats stats() const { return adapter().stats(); }

  // A synchronous SayHello through the proxy.
  Status Hello(const std::string& msg, std::string* reply = nullptr, uint32_t timeout_ms = 0) {
    auto ctx = MakeClientContext();
    if (timeout_ms > 0) ctx->SetTimeout(timeout_ms);
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    Status st = proxy_->SayHello(ctx, req, &rsp);
    if (reply) *reply = rsp.msg();
    return st;
  }
  // An asynchronous SayHello through the proxy, in callback form: `done` gets the call's status
  // once the reply (if any) is in `*rsp`.
  void AsyncHello(const ClientContextPtr& ctx, const HelloRequest& req, HelloReply* rsp,
                  std::function<void(const Status&)> done) {
    proxy_->AsyncSayHello(ctx, req).Then([rsp, done = std::move(done)](Future<HelloReply>&& reply) {
      if (reply.IsFailed()) {
        done(reply.GetException());
        return;
      }
      *rsp = reply.GetValue();
      done(kSuccStatus);
    });
  }
  // Checks that an ordinary call through the proxy succeeds.
  void ExpectServing(const std::string& msg = "are you there") {
    std::string reply;
    Status st = Hello(msg, &reply);
    EXPECT_TRUE(st.OK()) << st.ToString();
    EXPECT_EQ(reply, "Hello, " + msg);
  }

  static Config* config_;
  std::unique_ptr<Server> server_;
  NetAddress address_;
  std::shared_ptr<GreeterServiceProxy> proxy_;
};

Config* RpcE2eTest::config_ = nullptr;

// 1. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, SyncAsyncAndOnewayCalls) {
  StartServer();
  std::string reply;
  Status st = Hello("world", &reply);
  ASSERT_TRUE(st.OK()) << st.ToString();
  EXPECT_EQ(reply, "Hello, world");

  struct AsyncCall {
    ClientContextPtr ctx = MakeClientContext();
    HelloReply rsp;
    std::promise<Status> done;
  };
  auto call = std::make_shared<AsyncCall>();
  HelloRequest req;
  req.set_msg("async");
  AsyncHello(call->ctx, req, &call->rsp, [call](const Status& s) { call->done.set_value(s); });
  auto result = call->done.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(kIoTimeoutMs)), std::future_status::ready);
  Status async_status = result.get();
  EXPECT_TRUE(async_status.OK()) << async_status.ToString();
  EXPECT_EQ(call->rsp.msg(), "Hello, async");

  // One-way through the proxy: the handler runs.
  int before = g_count.load();
  auto ctx = MakeClientContext();
  req.set_msg("count");
  st = proxy_->SayHello(ctx, req);
  EXPECT_TRUE(st.OK()) << st.ToString();
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == before + 1; }));

  // One-way on a raw connection, followed by a unary call: the first frame back answers the
  // unary call, so the one-way call (handled first, in order) produced no reply.
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.Send(EncodeHello(7, "count", 5000, kOnewayCall) + EncodeHello(8, "after")));
  Reply r;
  ASSERT_TRUE(raw.ReadReply(&r));
  EXPECT_EQ(r.rsp.request_id, 8u) << "a one-way call got a reply";
  EXPECT_EQ(r.rsp.ret, 0);
  EXPECT_EQ(r.body.msg(), "Hello, after");
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == before + 2; }));
}

// A body compressed in a way the server cannot undo is not read as plain: ret 1 (decode error,
// as tRPC-Go answers) naming the encoding, the handler does not run, and the error reply claims
// no encoding. The connection goes on serving.
TEST_F(RpcE2eTest, UnsupportedContentEncodingGives1WithoutRunningTheHandler) {
  StartServer();
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  const int before = g_count.load();
  for (uint32_t encoding : {1u, 2u, 3u, 6u, 99u}) {
    ASSERT_TRUE(raw.Send(EncodeHello(encoding, "count", 5000, kUnaryCall, encoding)));
    Reply r;
    ASSERT_TRUE(raw.ReadReply(&r)) << "content_encoding " << encoding;
    EXPECT_EQ(r.rsp.request_id, encoding);
    EXPECT_EQ(r.rsp.ret, kServerDecodeErr);
    EXPECT_EQ(r.rsp.error_msg, "unsupported content_encoding " + std::to_string(encoding));
    EXPECT_EQ(r.rsp.content_encoding, 0u);
  }
  EXPECT_EQ(g_count.load(), before) << "a handler read a compressed body as plain";
  ASSERT_TRUE(raw.Send(EncodeHello(100, "plain")));
  Reply r;
  ASSERT_TRUE(raw.ReadReply(&r));
  EXPECT_EQ(r.rsp.ret, 0);
  EXPECT_EQ(r.body.msg(), "Hello, plain");
}

// 2. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, UnknownFuncGives12NamingTheFunc) {
  StartServer();
  const std::string func = "/trpc.test.helloworld.Greeter/Nope";
  auto ctx = MakeClientContext();
  ctx->SetFuncName(func);
  HelloRequest req;
  req.set_msg("anyone?");
  HelloReply rsp;
  Status st = proxy_->UnaryInvoke(ctx, req, &rsp);
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr) << st.ToString();
  EXPECT_THAT(st.ErrorMessage(), HasSubstr(func));
  ExpectServing();
}

// An application error travels in func_ret (ret 0) with its message. A handler's framework
// code that is not one of the framework's is sent as it is, and the server warns about it.
TEST_F(RpcE2eTest, AppErrorTravelsInFuncRetAndAForeignFrameworkCodeIsLogged) {
  StartServer();
  Status st = Hello("app_error");
  EXPECT_EQ(st.GetFrameworkRetCode(), 0) << st.ToString();
  EXPECT_EQ(st.GetFuncRetCode(), -404);
  EXPECT_EQ(st.ErrorMessage(), "no such greeting");

  const log::Level level = log::GetLevel();
  log::SetLevel(log::Level::kWarn);
  ::testing::internal::CaptureStderr();
  st = Hello("framework_ret");
  std::string logged = ::testing::internal::GetCapturedStderr();
  log::SetLevel(level);
  EXPECT_EQ(st.GetFrameworkRetCode(), -404) << st.ToString();
  EXPECT_EQ(st.GetFuncRetCode(), 0);
  EXPECT_THAT(logged, HasSubstr("/trpc.test.helloworld.Greeter/SayHello: the handler answered "
                                "framework code -404"));
  EXPECT_THAT(logged, HasSubstr("Status::AppError(-404, msg)"));
  ExpectServing();
}

// 3. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, ThrowingHandlerGives31ForThatCallOnly) {
  StartServer();
  Status st = Hello("throw");
  EXPECT_EQ(st.GetFrameworkRetCode(), kServerSystemErr) << st.ToString();
  ExpectServing("next");
  ExpectServing("and the next");
  // The failure did not cost the connection.
  EXPECT_EQ(stats().connections_accepted, 1u);
  EXPECT_EQ(stats().failed_requests, 1u);
}

// 4. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, ClientTimeoutGives101AndLaterCallsSucceed) {
  StartServer();
  int finished_before = g_sleeps_finished.load();
  Status st = Hello("sleep:300", nullptr, /*timeout_ms=*/50);
  int finished_at_return = g_sleeps_finished.load();
  EXPECT_EQ(st.GetFrameworkRetCode(), kClientInvokeTimeoutErr) << st.ToString();
  EXPECT_EQ(finished_at_return, finished_before)
      << "the call returned only after the handler finished: it waited past its timeout";
  ExpectServing("after the timeout");
  ExpectServing("and again");
  EXPECT_TRUE(WaitFor([&] { return g_sleeps_finished.load() == finished_before + 1; }));
}

// 5. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, ExpiredDeadlineGives21WithoutRunningTheHandler) {
  StartServer();
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  int count_before = g_count.load();
  // One write, so all are read in one batch: the last one's 20 ms run out while the first two
  // hold both server workers (in the fiber model the second is stolen by the other worker).
  ASSERT_TRUE(raw.Send(EncodeHello(1, "block:200", 5000) + EncodeHello(3, "block:200", 5000) +
                       EncodeHello(2, "count", 20)));
  std::map<uint32_t, Reply> replies;
  for (int i = 0; i < 3; ++i) {
    Reply r;
    ASSERT_TRUE(raw.ReadReply(&r)) << "reply " << i;
    uint32_t id = r.rsp.request_id;
    replies[id] = std::move(r);
  }
  ASSERT_EQ(replies.count(1), 1u);
  ASSERT_EQ(replies.count(2), 1u);
  EXPECT_EQ(replies[1].rsp.ret, 0);
  EXPECT_EQ(replies[1].body.msg(), "Hello, block:200");
  EXPECT_EQ(replies[2].rsp.ret, kServerTimeoutErr);
  EXPECT_EQ(g_count.load(), count_before) << "the handler ran although the deadline had passed";
}

// 6. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, ThousandConcurrentCallsOnOneConnection) {
  StartServer();
  constexpr int kCalls = 1000;
  // Shared with the callbacks, which may outlive a failed test until the proxy stops.
  struct State {
    std::vector<ClientContextPtr> ctxs;
    std::vector<HelloReply> rsps{kCalls};
    std::vector<Status> statuses{kCalls};
    std::vector<int> times_done = std::vector<int>(kCalls, 0);
    std::atomic<int> done{0};
  };
  auto state = std::make_shared<State>();
  std::vector<std::string> msgs;
  for (int i = 0; i < kCalls; ++i) {
    // The first call holds the server's worker for 100 ms: the others pile up in flight.
    msgs.push_back(i == 0 ? "sleep:100" : "call-" + std::to_string(i));
    state->ctxs.push_back(MakeClientContext());
    state->ctxs.back()->SetTimeout(30'000);
  }
  for (int i = 0; i < kCalls; ++i) {
    HelloRequest req;
    req.set_msg(msgs[i]);
    AsyncHello(state->ctxs[i], req, &state->rsps[i], [state, i](const Status& st) {
      state->statuses[i] = st;
      ++state->times_done[i];
      state->done.fetch_add(1, std::memory_order_acq_rel);
    });
  }
  ASSERT_TRUE(
      WaitFor([&] { return state->done.load(std::memory_order_acquire) == kCalls; }, 60'000))
      << state->done.load() << " of " << kCalls << " calls completed";
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_EQ(state->times_done[i], 1) << "call " << i;
    EXPECT_TRUE(state->statuses[i].OK()) << "call " << i << ": " << state->statuses[i].ToString();
    EXPECT_EQ(state->rsps[i].msg(), "Hello, " + msgs[i]) << "call " << i;
  }
  EXPECT_EQ(stats().connections_accepted, 1u) << "the calls did not share one connection";
  EXPECT_EQ(stats().requests, static_cast<uint64_t>(kCalls));
}

// 7. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, TenMegabyteBodyRoundTrip) {
  StartServer([](ServiceConfig* s) {
    s->max_packet_size = 16'000'000;
    s->timeout = 60'000;
  });
  const std::string msg = Letters(10'000'000);
  std::string reply;
  Status st = Hello(msg, &reply, /*timeout_ms=*/60'000);
  ASSERT_TRUE(st.OK()) << st.ToString();
  ASSERT_EQ(reply.size(), msg.size() + 7);
  EXPECT_TRUE(reply == "Hello, " + msg) << "the 10 MB body came back altered";
}

// 8. ------------------------------------------------------------------------------------------

// Each bad input closes its connection without a reply and counts as a protocol error; the
// server keeps serving everyone else.
TEST_F(RpcE2eTest, BadInputClosesTheConnectionAndTheServerKeepsServing) {
  StartServer();  // max_packet_size 10,000,000
  ExpectServing("before");

  // A RequestProtocol that parses, with attachment_size 1000 (field 12) in a frame with a
  // 4-byte body and no attachment.
  std::string attach_header = "\x18\x01";  // request_id 1
  attach_header += '\x3a';                 // func
  attach_header += static_cast<char>(std::string_view(kSayHelloFunc).size());
  attach_header += kSayHelloFunc;
  attach_header += "\x60\xe8\x07";  // attachment_size 1000
  const std::string body = "\x0a\x02hi";
  const std::string junk_header(8, '\x0f');  // field 1 with wire type 7: never valid protobuf

  struct Case {
    const char* name;
    std::string bytes;
  };
  const Case cases[] = {
      {"bad magic", FixedHeader(0x1234, 20, 0) + "abcd"},
      {"total < 16 + header size", FixedHeader(0x0930, 20, 100) + "abcd"},
      // Only the header is sent: the server must decide from it, not wait for 100 MB.
      {"total over max_packet_size", FixedHeader(0x0930, 100'000'000, 10)},
      {"garbage protobuf header",
       FixedHeader(0x0930,
                   static_cast<uint32_t>(kFixedHeaderSize + junk_header.size() + body.size()),
                   static_cast<uint16_t>(junk_header.size())) +
           junk_header + body},
      {"attachment larger than the frame",
       FixedHeader(0x0930,
                   static_cast<uint32_t>(kFixedHeaderSize + attach_header.size() + body.size()),
                   static_cast<uint16_t>(attach_header.size())) +
           attach_header + body},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    uint64_t errors_before = stats().protocol_errors;
    RawConnection raw(address_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw.Send(c.bytes));
    std::string received;
    EXPECT_TRUE(raw.WaitClosed(kIoTimeoutMs, &received)) << "the server kept the connection open";
    EXPECT_TRUE(received.empty()) << "the server answered garbage with " << received.size()
                                  << " bytes";
    EXPECT_TRUE(WaitFor([&] { return stats().protocol_errors > errors_before; }))
        << "not counted as a protocol error";
    ExpectServing(c.name);
  }
}

// Good requests and then an undecodable header in one write: the connection closes at the bad
// frame, and the requests before it still run (in the fiber model they were waiting to start
// together as the read's chain when the close came). Under ASan a context left parked would
// also show up as a leak.
TEST_F(RpcE2eTest, RequestsBeforeABadFrameInTheSameReadStillRun) {
  StartServer();
  const std::string junk_header(8, '\x0f');  // never valid protobuf
  const std::string body = "\x0a\x02hi";
  std::string bytes;
  for (uint32_t id = 1; id <= 5; ++id) bytes += EncodeHello(id, "count");
  bytes += FixedHeader(0x0930,
                       static_cast<uint32_t>(kFixedHeaderSize + junk_header.size() + body.size()),
                       static_cast<uint16_t>(junk_header.size())) +
           junk_header + body;
  int before = g_count.load();
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.Send(bytes));
  std::string received;
  EXPECT_TRUE(raw.WaitClosed(kIoTimeoutMs, &received)) << "the server kept the connection open";
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == before + 5; }))
      << "ran " << g_count.load() - before << " of the 5 requests before the bad frame";
  ExpectServing("after the bad frame");
}

TEST_F(RpcE2eTest, TruncatedHeaderThenCloseLeavesTheServerUnaffected) {
  StartServer();
  ExpectServing("before");
  const uint32_t connections_before = adapter().connection_count();  // the proxy's
  {
    RawConnection raw(address_);
    ASSERT_TRUE(raw.ok());
    ASSERT_TRUE(raw.Send(EncodeHello(1, "cut short").substr(0, 10)));
  }  // closed here
  ExpectServing("after");
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == connections_before; }))
      << "the server still holds the connection whose peer left mid-header";
  ExpectServing("still");
}

// 9. ------------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, MaxConnNumRefusesConnectionsBeyondTheLimit) {
  StartServer([](ServiceConfig* s) { s->max_conn_num = 2; });  // the proxy stays unused here
  RawConnection first(address_);
  RawConnection second(address_);
  for (RawConnection* c : {&first, &second}) {
    ASSERT_TRUE(c->ok());
    ASSERT_TRUE(c->Send(EncodeHello(1, "in")));
    Reply r;
    ASSERT_TRUE(c->ReadReply(&r));
    EXPECT_EQ(r.body.msg(), "Hello, in");
  }

  RawConnection third(address_);  // the kernel completes the handshake; the server then closes
  ASSERT_TRUE(third.ok());
  third.Send(EncodeHello(1, "too many"));  // may already fail: the close can come first
  std::string received;
  EXPECT_TRUE(third.WaitClosed(kIoTimeoutMs, &received)) << "a third connection was kept";
  EXPECT_TRUE(received.empty());
  // Counted just after the close, so the client can see the close first.
  EXPECT_TRUE(WaitFor([&] { return stats().connections_refused >= 1; }));

  // Once a slot frees up (asynchronously), a new connection is served.
  first.Close();
  bool served = WaitFor([&] {
    RawConnection next(address_);
    Reply r;
    return next.ok() && next.Send(EncodeHello(1, "again")) && next.ReadReply(&r, 1000) &&
           r.body.msg() == "Hello, again";
  });
  EXPECT_TRUE(served) << "no new connection was served after one of the two closed";
  ASSERT_TRUE(second.Send(EncodeHello(2, "still in")));
  Reply r;
  ASSERT_TRUE(second.ReadReply(&r));
  EXPECT_EQ(r.body.msg(), "Hello, still in");
}

// 10. -----------------------------------------------------------------------------------------

TEST_F(RpcE2eTest, IdleConnectionIsClosedAndABusyOneIsKept) {
  StartServer([](ServiceConfig* s) { s->idle_time = 200; });
  RawConnection idle(address_);
  RawConnection busy(address_);
  ASSERT_TRUE(idle.ok());
  ASSERT_TRUE(busy.ok());
  // A request every 50 ms for 600 ms: three idle periods, never idle for one.
  for (uint32_t i = 1; i <= 12; ++i) {
    ASSERT_TRUE(busy.Send(EncodeHello(i, "ping"))) << "round " << i;
    Reply r;
    ASSERT_TRUE(busy.ReadReply(&r)) << "round " << i;
    EXPECT_EQ(r.rsp.request_id, i);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string received;
  EXPECT_TRUE(idle.WaitClosed(5000, &received)) << "the idle connection was not closed";
  EXPECT_TRUE(received.empty());
  ASSERT_TRUE(busy.Send(EncodeHello(100, "still here")));
  Reply r;
  ASSERT_TRUE(busy.ReadReply(&r)) << "the busy connection was closed";
  EXPECT_EQ(r.body.msg(), "Hello, still here");
}

// 11. -----------------------------------------------------------------------------------------

// A client that sends requests for 64 KiB replies and does not read: the server must stop taking
// requests once 1 MiB of replies wait, and lose nothing when the client finally reads.
TEST_F(RpcE2eTest, SlowReaderIsHeldBackByMaxPendingWriteBytes) {
  constexpr uint64_t kLimit = 1u << 20;
  constexpr uint64_t kKernelBuffers = 32u << 20;  // generous bound on both sockets' buffers
  constexpr uint64_t kReplyBytes = 65536;
  constexpr int kMaxRequests = 5000;
  // Fiber model: requests run in fibers, so replies not yet queued are bounded separately.
  constexpr uint32_t kPendingRequests = 16;
  const uint64_t kInHandlers = FiberModel() ? kPendingRequests * kReplyBytes : 0;
  StartServer([](ServiceConfig* s) {
    s->max_pending_write_bytes = kLimit;
    s->max_pending_requests = kPendingRequests;
    s->timeout = 120'000;  // replies must be valid however long they wait
  });
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());

  // Phase 1: write without reading until the socket stays unwritable for 500 ms or the cap.
  std::string partial;  // the unsent rest of a request the kernel took only part of
  uint32_t next_id = 1;
  int complete = 0;
  int64_t unwritable_since = -1;
  for (;;) {
    if (partial.empty()) {
      if (static_cast<int>(next_id) > kMaxRequests) break;
      partial = EncodeHello(next_id++, "big:65536", 120'000);
    }
    ssize_t n = ::send(raw.fd(), partial.data(), partial.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      partial.erase(0, static_cast<size_t>(n));
      if (partial.empty()) ++complete;
      unwritable_since = -1;
      continue;
    }
    ASSERT_TRUE(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        << "send failed: " << strerror(errno);
    int64_t now = MonotonicMillis();
    if (unwritable_since < 0) unwritable_since = now;
    if (now - unwritable_since >= 500) break;
    pollfd pfd{raw.fd(), POLLOUT, 0};
    ::poll(&pfd, 1, 50);
  }
  const int expected = static_cast<int>(next_id) - 1;  // including a partly written one

  // Let the server take whatever it will, then check it stopped far short of everything sent.
  uint64_t handled = stats().requests;
  int64_t quiet_since = MonotonicMillis();
  int64_t give_up = quiet_since + kIoTimeoutMs;
  while (MonotonicMillis() - quiet_since < 300 && MonotonicMillis() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    uint64_t now_handled = stats().requests;
    if (now_handled != handled) {
      handled = now_handled;
      quiet_since = MonotonicMillis();
    }
  }
  EXPECT_LE(handled * kReplyBytes, kLimit + kKernelBuffers + kInHandlers)
      << "the server ran " << handled << " requests of " << complete
      << " sent although the client read nothing";
  EXPECT_LT(handled, static_cast<uint64_t>(complete));

  // Phase 2: read everything (finishing the partial request on the way): one valid reply per
  // request, in order. Meanwhile the server may never run far ahead of what the client took.
  const uint64_t max_ahead = (kLimit + kKernelBuffers + kInHandlers) / kReplyBytes + 1;
  std::vector<bool> got(static_cast<size_t>(expected) + 1);
  uint64_t worst_ahead = 0;
  int received = 0;
  int bad = 0;
  int64_t deadline = MonotonicMillis() + 120'000;
  while (received < expected && MonotonicMillis() < deadline) {
    if (!partial.empty()) {
      ssize_t n = ::send(raw.fd(), partial.data(), partial.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) partial.erase(0, static_cast<size_t>(n));
    }
    std::string frame;
    while (raw.CutFrame(&frame)) {
      Reply r;
      bool valid = DecodeReply(frame, &r) && r.rsp.ret == 0 && r.rsp.request_id >= 1 &&
                   r.rsp.request_id <= static_cast<uint32_t>(expected) && !got[r.rsp.request_id] &&
                   // Fibers may finish out of order; the merge model replies in order.
                   (FiberModel() || r.rsp.request_id == static_cast<uint32_t>(received + 1)) &&
                   r.body.msg().size() == kReplyBytes &&
                   r.body.msg().find_first_not_of('x') == std::string::npos;
      if (valid) got[r.rsp.request_id] = true;
      if (!valid && ++bad <= 5) {
        ADD_FAILURE() << "reply " << received + 1 << " is wrong: id " << r.rsp.request_id
                      << ", ret " << r.rsp.ret << ", " << r.body.msg().size() << " bytes";
      }
      ++received;
      uint64_t ahead = stats().requests - static_cast<uint64_t>(received);
      worst_ahead = std::max(worst_ahead, ahead);
    }
    if (received >= expected) break;
    RawConnection::Result res = raw.Fill(std::min(deadline, MonotonicMillis() + 100));
    ASSERT_NE(res, RawConnection::Result::kClosed) << "closed after " << received << " replies";
  }
  EXPECT_EQ(received, expected) << "replies lost";
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(stats().requests, static_cast<uint64_t>(expected));
  EXPECT_LE(worst_ahead, max_ahead)
      << "while the client was reading, the server ran up to " << worst_ahead
      << " requests (of 64 KiB replies) ahead of it: far more than max_pending_write_bytes "
      << "allows to wait";
}

// 12. -----------------------------------------------------------------------------------------

// conn_type "short": every call opens a connection of its own and closes it when done; a one-way
// call on a short connection is still delivered (the connection closes only once it is written).
TEST_F(RpcE2eTest, ShortConnectionsOpenOneConnectionPerCall) {
  StartServer({}, [](ClientServiceConfig* c) { c->conn_type = "short"; });
  const uint64_t accepted_before = stats().connections_accepted;
  for (int i = 1; i <= 5; ++i) {
    const std::string msg = "short " + std::to_string(i);
    std::string reply;
    Status st = Hello(msg, &reply);
    ASSERT_TRUE(st.OK()) << "call " << i << ": " << st.ToString();
    EXPECT_EQ(reply, "Hello, " + msg);
    EXPECT_EQ(stats().connections_accepted, accepted_before + i)
        << "call " << i << " did not come on a connection of its own";
  }
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == 0; }))
      << adapter().connection_count() << " short connections were left open";

  int count_before = g_count.load();
  HelloRequest req;
  req.set_msg("count");
  Status st = proxy_->SayHello(MakeClientContext(), req);
  EXPECT_TRUE(st.OK()) << st.ToString();
  EXPECT_TRUE(WaitFor([&] { return g_count.load() == count_before + 1; }))
      << "a one-way call on a short connection never reached the handler";
  EXPECT_EQ(stats().connections_accepted, accepted_before + 6);
  EXPECT_TRUE(WaitFor([&] { return adapter().connection_count() == 0; }))
      << "the one-way call's short connection was left open";
  ExpectServing("after the one-way call");
}

// 13. -----------------------------------------------------------------------------------------

// The inodes of this process's TCP sockets in LISTEN state (from /proc), so a test can tell
// whether a server left one behind without knowing its port.
std::vector<std::string> ListeningSocketInodes() {
  std::vector<std::string> listening;  // every LISTEN socket on the host
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    FILE* f = std::fopen(table, "r");
    if (f == nullptr) continue;
    char line[512];
    while (std::fgets(line, sizeof(line), f) != nullptr) {
      char state[8] = {0};
      char inode[32] = {0};
      // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
      if (std::sscanf(line, " %*s %*s %*s %7s %*s %*s %*s %*s %*s %31s", state, inode) == 2 &&
          std::strcmp(state, "0A") == 0) {
        listening.push_back(inode);
      }
    }
    std::fclose(f);
  }
  std::vector<std::string> mine;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    if (ec || !target.starts_with("socket:[")) continue;
    std::string inode = target.substr(8, target.size() - 9);
    if (std::find(listening.begin(), listening.end(), inode) != listening.end()) {
      mine.push_back(inode);
    }
  }
  std::sort(mine.begin(), mine.end());
  return mine;
}

struct PendingHello {
  ClientContextPtr ctx = MakeClientContext();
  HelloReply rsp;
  std::promise<Status> done;
};

// Server::Stop while a call is inside its handler: the call completes normally, reply included,
// and afterwards nothing listens on the service's address.
TEST_F(RpcE2eTest, StopLetsAnInFlightCallFinish) {
  const std::vector<std::string> listening_before = ListeningSocketInodes();
  StartServer();
  ASSERT_EQ(ListeningSocketInodes().size(), listening_before.size() + 1)
      << "ListeningSocketInodes() does not see the server's listening socket";
  auto call = std::make_shared<PendingHello>();
  call->ctx->SetTimeout(kIoTimeoutMs);
  const int started_before = g_sleeps_started.load();
  HelloRequest req;
  req.set_msg("sleep:300");
  AsyncHello(call->ctx, req, &call->rsp, [call](const Status& st) { call->done.set_value(st); });
  ASSERT_TRUE(WaitFor([&] { return g_sleeps_started.load() == started_before + 1; }))
      << "the handler never started";
  server_->Stop();

  auto result = call->done.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(kIoTimeoutMs)), std::future_status::ready);
  Status st = result.get();
  EXPECT_TRUE(st.OK()) << "the in-flight call failed: " << st.ToString();
  EXPECT_EQ(call->rsp.msg(), "Hello, sleep:300");
  EXPECT_EQ(ListeningSocketInodes(), listening_before) << "the stopped server still listens";
}

// As above with a 12 MB reply, which the socket cannot take in one write: Stop must keep the
// connection until the whole reply has been written, not close it with the rest still queued.
TEST_F(RpcE2eTest, StopWritesAnInFlightCallsWholeReply) {
  constexpr size_t kReplyBytes = 12'000'000;
  StartServer();
  auto call = std::make_shared<PendingHello>();
  call->ctx->SetTimeout(30'000);
  const int started_before = g_sleeps_started.load();
  HelloRequest req;
  req.set_msg("sleep:300:big:" + std::to_string(kReplyBytes));
  AsyncHello(call->ctx, req, &call->rsp, [call](const Status& st) { call->done.set_value(st); });
  ASSERT_TRUE(WaitFor([&] { return g_sleeps_started.load() == started_before + 1; }))
      << "the handler never started";
  server_->Stop();

  auto result = call->done.get_future();
  ASSERT_EQ(result.wait_for(std::chrono::milliseconds(30'000)), std::future_status::ready);
  Status st = result.get();
  EXPECT_TRUE(st.OK()) << "the in-flight call failed: " << st.ToString();
  EXPECT_EQ(call->rsp.msg().size(), kReplyBytes);
  EXPECT_EQ(call->rsp.msg().find_first_not_of('x'), std::string::npos);
}

// 14. -----------------------------------------------------------------------------------------
// A config whose second service names an unknown protocol: Start fails with an error that points
// at the config entry, and the first service, already listening by then, is closed again.
TEST_F(RpcE2eTest, StartFailureNamesTheEntryAndLeavesNothingListening) {
  const std::string kYaml = std::string(FiberModel() ? kFiberModels : kMergeModels) + R"(server:
  app: test
  server: e2e
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: e2e_server
    - name: trpc.test.helloworld.Greeter2
      protocol: nope
      ip: 127.0.0.1
      port: 0
      threadmodel_instance_name: e2e_server
)";
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(kYaml, "t.yaml", &config, &err)) << err;
  ASSERT_EQ(config.server.service.size(), 2u);
  const std::vector<std::string> listening_before = ListeningSocketInodes();

  Server server(config.server);
  ASSERT_TRUE(server.RegisterService(kGreeterName, std::make_shared<TestGreeter>()));
  ASSERT_TRUE(
      server.RegisterService("trpc.test.helloworld.Greeter2", std::make_shared<TestGreeter>()));
  err.clear();
  EXPECT_FALSE(server.Start(&err));
  EXPECT_TRUE(err.starts_with("t.yaml:")) << err;
  EXPECT_THAT(err, HasSubstr("'nope'"));

  NetAddress first;
  if (server.GetAddress(kGreeterName, &first)) {
    RawConnection raw(first);
    EXPECT_FALSE(raw.ok()) << "the first service still accepts connections on " << first.ToString();
  }
  EXPECT_EQ(ListeningSocketInodes(), listening_before)
      << "the failed Start left a listening socket behind";
}

// 15. -----------------------------------------------------------------------------------------
// Two requests pipelined on one connection, the first sleeping 5 ms in its handler. In the fiber
// model the sleep parks only its fiber, so the second reply overtakes the first; in the merge
// model the handler holds its worker, so replies come back in request order. Asserts on order,
// not on time.
TEST_F(RpcE2eTest, SleepingHandlerHoldsUpItsConnectionOnlyInTheMergeModel) {
  StartServer();
  RawConnection raw(address_);
  ASSERT_TRUE(raw.ok());
  ASSERT_TRUE(raw.Send(EncodeHello(1, "sleep:5") + EncodeHello(2, "quick")));
  Reply first, second;
  ASSERT_TRUE(raw.ReadReply(&first));
  ASSERT_TRUE(raw.ReadReply(&second));
  if (FiberModel()) {
    EXPECT_EQ(first.rsp.request_id, 2u) << "the sleeping handler held up the next request";
    EXPECT_EQ(second.rsp.request_id, 1u);
  } else {
    EXPECT_EQ(first.rsp.request_id, 1u);
    EXPECT_EQ(second.rsp.request_id, 2u);
  }
  EXPECT_EQ(first.rsp.ret, 0);
  EXPECT_EQ(second.rsp.ret, 0);
}

}  // namespace
}  // namespace trpc::test::helloworld
