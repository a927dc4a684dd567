#pragma once

// The Forward service in both thread models' idioms, shared by the example server, the
// end-to-end tests and the benchmarks.

#include <memory>
#include <string>

#include "examples/forward/forward.trpc.pb.h"
#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/server/service.h"

namespace trpc::test::forward {

/// `client.service[]` names the forward server calls.
inline constexpr char kRouteCallee[] = "trpc.test.helloworld.Greeter";
inline constexpr char kParallelCallee2[] = "trpc.test.helloworld.Greeter2";

using GreeterProxyPtr = std::shared_ptr<helloworld::GreeterServiceProxy>;

/// The fiber model's Forward: plain synchronous code. Each call parks only its fiber.
class SyncForwardImpl final : public Forward {
 public:
  SyncForwardImpl(GreeterProxyPtr first, GreeterProxyPtr second)
      : first_(std::move(first)), second_(std::move(second)) {}

  Status Route(ServerContextPtr ctx, const helloworld::HelloRequest* req,
               helloworld::HelloReply* rsp) override;
  Status ParallelRoute(ServerContextPtr ctx, const helloworld::HelloRequest* req,
                       helloworld::HelloReply* rsp) override;

 private:
  GreeterProxyPtr first_;
  GreeterProxyPtr second_;
};

/// The merged model's Forward: returns futures. The downstream call is made on the worker
/// serving the request and completes there, so the reply goes out from the future's
/// continuation on that same thread; nothing crosses threads and nothing blocks.
class AsyncForwardImpl final : public AsyncForward {
 public:
  AsyncForwardImpl(GreeterProxyPtr first, GreeterProxyPtr second)
      : first_(std::move(first)), second_(std::move(second)) {}

  Future<helloworld::HelloReply> Route(const ServerContextPtr& ctx,
                                       const helloworld::HelloRequest* req) override;
  Future<helloworld::HelloReply> ParallelRoute(const ServerContextPtr& ctx,
                                               const helloworld::HelloRequest* req) override;

 private:
  GreeterProxyPtr first_;
  GreeterProxyPtr second_;
};

/// The Forward implementation for the running thread model (the first configured instance),
/// with its proxies from the process's TrpcClient. Null (with `*err`) when a callee is not
/// configured.
ServicePtr MakeForwardService(std::string* err);

}  // namespace trpc::test::forward
