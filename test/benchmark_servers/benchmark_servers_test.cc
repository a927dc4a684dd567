// The benchmark's servers, run as the benchmarks run them (subprocesses on loopback, free ports)
// and called through the framework's generated client: raw_echo_server (benchmark/baseline) and
// echo_server (examples/echo) must echo HelloRequest.msg exactly, match 1000 concurrent replies
// to their calls, and echo_server must delay exactly the requests tagged with `trpc-bench-tail`,
// parking only them in the fiber model and holding its worker in the merged model.

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/child_server.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"

namespace trpc::test::benchmark_servers {
namespace {

using helloworld::GreeterServiceProxy;
using helloworld::HelloReply;
using helloworld::HelloRequest;

constexpr char kTailKey[] = "trpc-bench-tail";

// echo_server on a free port, with a config written for it.
std::string StartBenchEchoServer(ChildServer* server, const std::string& model, int workers) {
  std::string path =
      fmt::format("{}bench_echo_{}_{}_{}.yaml", ::testing::TempDir(), model, workers, getpid());
  std::ofstream(path) << trpc::testing::ThreadModelYaml(model == "fiber", {{"bench", workers}})
                      << R"(server:
  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
      timeout: 10000
plugins:
  log:
    level: warn
)";
  std::string addr = server->Start({BENCH_ECHO_SERVER_PATH, "--config", path});
  std::remove(path.c_str());
  return addr;
}

// The client side (trpc::testing::ClientRuntimeTest): one merge worker, so every call of a proxy
// (max_conn_num 1) goes out on one connection in the order it was made.
class BenchmarkServersTest : public trpc::testing::ClientRuntimeTest {
 protected:
  static std::shared_ptr<GreeterServiceProxy> Proxy(const std::string& target) {
    ClientServiceConfig c;
    c.target = target;
    c.timeout = 10000;
    std::string err;
    auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>(
        fmt::format("greeter_{}", ++proxies_made_), c, &err);
    EXPECT_NE(proxy, nullptr) << err;
    return proxy;
  }

  // Starts echo_server and returns a proxy to it (null, with a failure, if it did not start).
  static std::shared_ptr<GreeterServiceProxy> StartBenchEcho(ChildServer* server,
                                                             const std::string& model,
                                                             int workers) {
    std::string addr = StartBenchEchoServer(server, model, workers);
    return addr.empty() ? nullptr : Proxy(addr);
  }

  // One message each way, including an empty one and one spanning many reads and writes.
  static void ExpectEchoes(GreeterServiceProxy* proxy) {
    for (std::string msg : {std::string("hello"), std::string(), std::string(300'000, 'x')}) {
      HelloRequest req;
      req.set_msg(msg);
      HelloReply rsp;
      Status st = proxy->SayHello(MakeClientContext(), req, &rsp);
      ASSERT_TRUE(st.OK()) << st.ToString();
      EXPECT_EQ(rsp.msg(), msg);
    }
  }

  // 1000 calls in flight at once, each reply matched to its own call.
  static void ExpectConcurrentEchoes(GreeterServiceProxy* proxy) {
    constexpr int kCalls = 1000;
    std::vector<Future<HelloReply>> futures;
    for (int i = 0; i < kCalls; ++i) {
      HelloRequest req;
      req.set_msg(fmt::format("call {}", i));
      futures.push_back(proxy->AsyncSayHello(MakeClientContext(), req));
    }
    auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
    for (int i = 0; i < kCalls; ++i) {
      ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
      EXPECT_EQ(all[i].GetValue().msg(), fmt::format("call {}", i));
    }
  }

  static inline int proxies_made_ = 0;
};

int64_t MillisOfCall(GreeterServiceProxy* proxy, const std::string& tail, std::string* msg_back) {
  HelloRequest req;
  req.set_msg("timed");
  HelloReply rsp;
  auto ctx = MakeClientContext();
  if (!tail.empty()) ctx->AddReqTransInfo(kTailKey, tail);
  auto start = std::chrono::steady_clock::now();
  Status st = proxy->SayHello(ctx, req, &rsp);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start)
                .count();
  EXPECT_TRUE(st.OK()) << st.ToString();
  if (msg_back != nullptr) *msg_back = rsp.msg();
  return ms;
}

// Sends a request tagged to sleep 300 ms, then an untagged one, on the same connection; returns
// true if the untagged reply arrived first.
bool UntaggedOvertakesSleepingOne(GreeterServiceProxy* proxy) {
  // Both continuations run on the client's one reactor thread, in the order the replies came.
  std::atomic<int> order{0};
  std::atomic<int> tagged_done{0};
  std::atomic<int> untagged_done{0};
  HelloRequest req;
  req.set_msg("order");
  auto tagged_ctx = MakeClientContext();
  tagged_ctx->AddReqTransInfo(kTailKey, "sleep:300000");
  auto tagged = proxy->AsyncSayHello(tagged_ctx, req).Then([&](Future<HelloReply>&& f) {
    EXPECT_TRUE(f.IsReady());
    tagged_done = ++order;
  });
  auto untagged = proxy->AsyncSayHello(MakeClientContext(), req).Then([&](Future<HelloReply>&& f) {
    EXPECT_TRUE(f.IsReady());
    untagged_done = ++order;
  });
  BlockingGet(std::move(tagged));
  BlockingGet(std::move(untagged));
  return untagged_done.load() < tagged_done.load();
}

TEST_F(BenchmarkServersTest, RawEchoServerEchoesThroughTheFrameworkClient) {
  ChildServer server;
  std::string addr = server.Start({RAW_ECHO_SERVER_PATH, "--port", "0"});
  ASSERT_FALSE(addr.empty());
  auto proxy = Proxy(addr);
  ASSERT_NE(proxy, nullptr);
  ExpectEchoes(proxy.get());
  ExpectConcurrentEchoes(proxy.get());
  // 24 MB of replies in flight at once: more than the socket buffers hold, so the server's
  // writes come back partial and it has to finish them on EPOLLOUT.
  std::vector<Future<HelloReply>> futures;
  for (int i = 0; i < 24; ++i) {
    HelloRequest req;
    req.set_msg(std::string(1 << 20, static_cast<char>('a' + i)));
    futures.push_back(proxy->AsyncSayHello(MakeClientContext(), req));
  }
  auto all = BlockingGet(WhenAll(std::move(futures))).GetValue();
  for (int i = 0; i < 24; ++i) {
    ASSERT_TRUE(all[i].IsReady()) << all[i].GetException().ToString();
    EXPECT_EQ(all[i].GetValue().msg(), std::string(1 << 20, static_cast<char>('a' + i)));
  }
}

TEST_F(BenchmarkServersTest, RawEchoServerWithSeveralListeners) {
  ChildServer server;
  std::string addr = server.Start({RAW_ECHO_SERVER_PATH, "--port", "0", "--threads", "2"});
  ASSERT_FALSE(addr.empty());
  ClientServiceConfig c;
  c.target = addr;
  c.max_conn_num = 8;  // spread over both listeners by the kernel
  auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>("raw_two_listeners", c);
  ASSERT_NE(proxy, nullptr);
  ExpectConcurrentEchoes(proxy.get());
}

// Raw bytes over a socket: docs/protocol.md's worked example gets the echo frame, byte for byte, a
// one-way call nothing; a frame with a bad magic gets the connection closed.
TEST_F(BenchmarkServersTest, RawEchoServerFramesByHand) {
  ChildServer server;
  std::string addr = server.Start({RAW_ECHO_SERVER_PATH, "--port", "0"});
  ASSERT_FALSE(addr.empty());
  int port = std::stoi(addr.substr(addr.rfind(':') + 1));
  auto connect_to_server = [port] {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)), 0);
    timeval tv{10, 0};  // a missing reply fails the test instead of hanging it
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  };
  auto read_all = [](int fd, size_t want) {
    std::string got;
    char buf[256];
    ssize_t n;
    while (got.size() < want && (n = read(fd, buf, sizeof(buf))) > 0) got.append(buf, n);
    return got;
  };

  std::string callee = "trpc.test.helloworld.Greeter";
  std::string func = "/trpc.test.helloworld.Greeter/SayHello";
  std::string fixed("\x09\x30\x00\x00\x00\x00\x00\x5f\x00\x4b\x00\x00\x00\x00\x00\x00", 16);
  std::string request =
      fixed + "\x18\x01\x20\xe8\x07\x32\x1c" + callee + "\x3a\x26" + func + "\x0a\x02hi";
  ASSERT_EQ(request.size(), 95u);
  // A one-way call (call_type 1, request_id 2): no answer.
  std::string oneway =
      std::string("\x09\x30\x00\x00\x00\x00\x00\x18\x00\x04\x00\x00\x00\x00\x00\x00", 16) +
      "\x10\x01\x18\x02\x0a\x02hi";
  // All in one write: the two unary calls are answered, in order, and nothing else.
  int fd = connect_to_server();
  std::string two = oneway + request + request;
  ASSERT_EQ(write(fd, two.data(), two.size()), static_cast<ssize_t>(two.size()));
  std::string reply(
      "\x09\x30\x00\x00\x00\x00\x00\x16\x00\x02\x00\x00\x00\x00\x00\x00"
      "\x18\x01\x0a\x02hi",
      22);
  EXPECT_EQ(read_all(fd, 44), reply + reply);
  close(fd);

  fd = connect_to_server();
  std::string bad = request;
  bad[1] = '\x31';
  ASSERT_EQ(write(fd, bad.data(), bad.size()), static_cast<ssize_t>(bad.size()));
  char c;
  EXPECT_EQ(read(fd, &c, 1), 0);  // closed, nothing answered
  close(fd);
}

class BenchEchoServerTest : public BenchmarkServersTest,
                            public ::testing::WithParamInterface<const char*> {};

TEST_P(BenchEchoServerTest, EchoesTheMessageUnchanged) {
  ChildServer server;
  auto proxy = StartBenchEcho(&server, GetParam(), 1);
  ASSERT_NE(proxy, nullptr);
  ExpectEchoes(proxy.get());
  ExpectConcurrentEchoes(proxy.get());
}

TEST_P(BenchEchoServerTest, DelaysExactlyTheTaggedRequests) {
  ChildServer server;
  auto proxy = StartBenchEcho(&server, GetParam(), 1);
  ASSERT_NE(proxy, nullptr);
  std::string msg;
  EXPECT_GE(MillisOfCall(proxy.get(), "sleep:20000", &msg), 20);
  EXPECT_EQ(msg, "timed");
  EXPECT_GE(MillisOfCall(proxy.get(), "spin:20000", &msg), 20);
  EXPECT_EQ(msg, "timed");
  // Untagged calls are not delayed: the fastest of a few is well under 20 ms even on a busy
  // machine.
  int64_t fastest = 1'000'000;
  for (int i = 0; i < 5; ++i) fastest = std::min(fastest, MillisOfCall(proxy.get(), "", nullptr));
  EXPECT_LT(fastest, 20);
  // Malformed tags are ignored: answered at once (not after the 2 s they seem to ask for).
  for (const char* bad : {"sleep:2000000x", "nap:2000000", "sleep:-2000000", "spin:", "sleep:1e6",
                          "sleep:99999999999"}) {
    EXPECT_LT(MillisOfCall(proxy.get(), bad, &msg), 1000) << bad;
    EXPECT_EQ(msg, "timed") << bad;
  }
}

INSTANTIATE_TEST_SUITE_P(BothModels, BenchEchoServerTest, ::testing::Values("merge", "fiber"),
                         [](const auto& info) { return std::string(info.param); });

// The long-tail scenario's premise: a sleeping handler holds the merged model's only worker, so
// the request behind it waits; in the fiber model it parks only its own fiber.
TEST_F(BenchmarkServersTest, MergedWorkerHoldsTheQueueWhileATaggedRequestSleeps) {
  ChildServer server;
  auto proxy = StartBenchEcho(&server, "merge", 1);
  ASSERT_NE(proxy, nullptr);
  EXPECT_FALSE(UntaggedOvertakesSleepingOne(proxy.get()));
}

TEST_F(BenchmarkServersTest, FiberModelLetsUntaggedRequestsPassASleepingOne) {
  ChildServer server;
  auto proxy = StartBenchEcho(&server, "fiber", 2);
  ASSERT_NE(proxy, nullptr);
  EXPECT_TRUE(UntaggedOvertakesSleepingOne(proxy.get()));
}

}  // namespace
}  // namespace trpc::test::benchmark_servers
