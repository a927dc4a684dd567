// grpc_echo_server (benchmark/baseline), run as a subprocess and called with gRPC's own client:
// the echo, and many concurrent calls each answered with its own message. Built only with
// TRPC_BUILD_GRPC_PEER.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
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

TEST(GrpcEchoServerTest, EchoesTheMessageUnchanged) {
  ChildServer server;
  std::string addr = server.Start({GRPC_ECHO_SERVER_PATH, "--port", "0"});
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

TEST(GrpcEchoServerTest, ConcurrentCallsGetTheirOwnReplies) {
  ChildServer server;
  std::string addr = server.Start({GRPC_ECHO_SERVER_PATH, "--port", "0"});
  ASSERT_FALSE(addr.empty());
  auto stub = Connect(addr);
  constexpr int kCalls = 1000;
  struct Call {
    grpc::ClientContext ctx;
    HelloRequest req;
    HelloReply rsp;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<HelloReply>> reader;
  };
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<Call>> calls;
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    Deadline(&call->ctx);
    call->req.set_msg("call " + std::to_string(i));
    call->reader = stub->AsyncSayHello(&call->ctx, call->req, &cq);
    call->reader->Finish(&call->rsp, &call->status, call.get());
    calls.push_back(std::move(call));
  }
  for (int i = 0; i < kCalls; ++i) {
    void* tag = nullptr;
    bool ok = false;
    ASSERT_TRUE(cq.Next(&tag, &ok));
    ASSERT_TRUE(ok);
  }
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i]->status.ok()) << calls[i]->status.error_message();
    EXPECT_EQ(calls[i]->rsp.msg(), "call " + std::to_string(i));
  }
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace trpc::test::benchmark_servers
