#pragma once

// Our implementation of gRPC's interop TestService (unary and streaming methods), served over
// `protocol: grpc` for the real gRPC clients, and over trpc too (one implementation, any protocol).
//
// Besides what gRPC's interop descriptions ask of a server, it has the test extensions of
// README.md: `x-interop-sleep-ms` makes a call sleep (noticing cancellation), and EmptyCall with
// `x-interop-query: cancelled` reports how many calls were seen cancelled.

#include <atomic>
#include <memory>

#include "grpc/testing/test.trpc.pb.h"

namespace trpc::test::interop {

class TestServiceImpl final : public ::grpc::testing::TestService {
 public:
  /// Registers the streaming methods too, in their non-blocking form, which both thread models
  /// run: StreamingOutputCall, StreamingInputCall, FullDuplexCall and HalfDuplexCall.
  TestServiceImpl();

  Status EmptyCall(ServerContextPtr ctx, const ::grpc::testing::Empty* req,
                   ::grpc::testing::Empty* rsp) override;
  Status UnaryCall(ServerContextPtr ctx, const ::grpc::testing::SimpleRequest* req,
                   ::grpc::testing::SimpleResponse* rsp) override;
  // UnimplementedCall stays unimplemented: the generated default answers 12 (UNIMPLEMENTED).

  /// Streaming responses whose Write() completed (taken within the writer's bound), in this
  /// process.
  static uint64_t responses_written();

  uint64_t cancelled_seen() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  // Sleeps as the request's x-interop-sleep-ms asks; false if the call was cancelled meanwhile.
  bool SleepAsAsked(const ServerContextPtr& ctx);
  std::atomic<uint64_t> cancelled_{0};
};

}  // namespace trpc::test::interop
