// grpc_echo_server (benchmark/baseline), run as a subprocess and called with gRPC's own client:
// the echo, many concurrent calls each answered with its own message, and a clean exit on
// SIGTERM in the middle of a load, in each of its modes (callback API; completion queues with one
// thread and with four). Built only with TRPC_BUILD_GRPC_PEER.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "helloworld.grpc.pb.h"
#include "test/common/child_server.h"

namespace trpc::test::benchmark_servers {
namespace {

using helloworld::Greeter;
using helloworld::HelloReply;
using helloworld::HelloRequest;

std::unique_ptr<Greeter::Stub> Connect(const std::string& addr) {
  return Greeter::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
}

void Deadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
}

// The server's arguments after "--port 0" for each mode.
class GrpcEchoServerTest : public ::testing::TestWithParam<std::vector<std::string>> {
 protected:
  std::string Start(ChildServer* server) {
    std::vector<std::string> args{GRPC_ECHO_SERVER_PATH, "--port", "0"};
    args.insert(args.end(), GetParam().begin(), GetParam().end());
    return server->Start(args);
  }
};

// Async calls on one completion queue; Wait() collects them all.
struct Calls {
  struct Call {
    grpc::ClientContext ctx;
    HelloRequest req;
    HelloReply rsp;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<HelloReply>> reader;
  };
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<Call>> calls;

  void Start(Greeter::Stub* stub, int n) {
    for (int i = 0; i < n; ++i) {
      auto call = std::make_unique<Call>();
      Deadline(&call->ctx);
      call->req.set_msg("call " + std::to_string(calls.size()));
      call->reader = stub->AsyncSayHello(&call->ctx, call->req, &cq);
      call->reader->Finish(&call->rsp, &call->status, call.get());
      calls.push_back(std::move(call));
    }
  }
  void Wait() {
    for (size_t i = 0; i < calls.size(); ++i) {
      void* tag = nullptr;
      bool ok = false;
      ASSERT_TRUE(cq.Next(&tag, &ok));
      ASSERT_TRUE(ok);
    }
  }
  ~Calls() {
    cq.Shutdown();
    void* tag;
    bool ok;
    while (cq.Next(&tag, &ok)) {
    }
  }
};

TEST_P(GrpcEchoServerTest, EchoesTheMessageUnchanged) {
  ChildServer server;
  std::string addr = Start(&server);
  ASSERT_FALSE(addr.empty());
  auto stub = Connect(addr);
  for (std::string msg : {std::string("hello"), std::string(), std::string(300'000, 'x')}) {
    grpc::ClientContext ctx;
    Deadline(&ctx);
    HelloRequest req;
    req.set_msg(msg);
    HelloReply rsp;
    grpc::Status st = stub->SayHello(&ctx, req, &rsp);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(rsp.msg(), msg);
  }
}

TEST_P(GrpcEchoServerTest, ConcurrentCallsGetTheirOwnReplies) {
  ChildServer server;
  std::string addr = Start(&server);
  ASSERT_FALSE(addr.empty());
  auto stub = Connect(addr);
  // More than the completion-queue mode keeps requested per queue, so some calls wait unmatched.
  constexpr int kCalls = 3000;
  Calls calls;
  calls.Start(stub.get(), kCalls);
  calls.Wait();
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls.calls[i]->status.ok()) << calls.calls[i]->status.error_message();
    EXPECT_EQ(calls.calls[i]->rsp.msg(), "call " + std::to_string(i));
  }
}

TEST_P(GrpcEchoServerTest, ExitsZeroOnSigtermUnderLoad) {
  ChildServer server;
  std::string addr = Start(&server);
  ASSERT_FALSE(addr.empty());
  // Several connections (each its own channel), so that with four threads more than one queue
  // has calls when the signal comes.
  std::vector<std::unique_ptr<Greeter::Stub>> stubs;
  grpc::ChannelArguments unshared;
  for (int i = 0; i < 4; ++i) {
    unshared.SetInt("trpc.test.channel", i);  // distinct args: a subchannel of its own
    stubs.push_back(Greeter::NewStub(
        grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(), unshared)));
  }
  Calls warm;
  for (auto& stub : stubs) warm.Start(stub.get(), 100);
  warm.Wait();
  Calls calls;
  for (auto& stub : stubs) calls.Start(stub.get(), 2000);
  server.Signal(SIGTERM);
  int status = 0;
  ASSERT_TRUE(server.WaitExit(10'000, &status)) << "did not exit within 10 s of SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  // The calls end one way or the other (answered, or failed by the shutdown), none hangs.
  for (size_t i = 0; i < calls.calls.size(); ++i) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(calls.cq.Next(&tag, &ok));
  }
  for (auto& call : calls.calls) {
    if (call->status.ok()) {
      EXPECT_EQ(call->rsp.msg(), call->req.msg());
    }
  }
}

TEST(GrpcEchoServerArgsTest, RejectsBadArguments) {
  for (const char* args : {"--mode foo", "--threads 0", "--mode cq --threads 257",
                           "--mode callback --threads 257", "--threads -1", "--bogus"}) {
    std::string cmd = std::string(GRPC_ECHO_SERVER_PATH) + " --port 0 " + args + " 2>/dev/null";
    int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << args << ": " << status;
  }
}

// In callback mode --threads N confines the server to N of the CPUs it may use: gRPC's own
// threads, whatever their number, share those.
TEST(GrpcEchoServerArgsTest, CallbackThreadsConfineTheCpus) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  const int allowed = CPU_COUNT(&mine);
  for (int threads : {1, 2, 256}) {
    ChildServer server;
    std::string addr = server.Start({GRPC_ECHO_SERVER_PATH, "--port", "0", "--mode", "callback",
                                     "--threads", std::to_string(threads)});
    ASSERT_FALSE(addr.empty());
    cpu_set_t its;
    ASSERT_EQ(sched_getaffinity(server.pid(), sizeof(its), &its), 0);
    EXPECT_EQ(CPU_COUNT(&its), std::min(threads, allowed)) << "--threads " << threads;
    HelloRequest req;
    req.set_msg("confined");
    HelloReply rsp;
    grpc::ClientContext ctx;
    Deadline(&ctx);
    ASSERT_TRUE(Connect(addr)->SayHello(&ctx, req, &rsp).ok());
    EXPECT_EQ(rsp.msg(), "confined");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, GrpcEchoServerTest,
    ::testing::Values(std::vector<std::string>{}, std::vector<std::string>{"--mode", "callback"},
                      std::vector<std::string>{"--mode", "cq"},
                      std::vector<std::string>{"--mode", "cq", "--threads", "4"}),
    [](const ::testing::TestParamInfo<std::vector<std::string>>& info) {
      std::string name;
      for (const auto& a : info.param) {
        if (a.rfind("--", 0) != 0) name += a;
      }
      return name.empty() ? std::string("default") : name;
    });

}  // namespace
}  // namespace trpc::test::benchmark_servers
