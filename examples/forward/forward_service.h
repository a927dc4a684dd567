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

/// Forward in either thread model: each method returns a future of the downstream reply. The
/// downstream call is made on the worker serving the request and completes there, so the reply
/// goes out from the future's continuation on that same thread; nothing blocks, which is what
/// the merged model needs, and the fiber model runs it as it is.
class ForwardImpl final : public AsyncForward {
 public:
  ForwardImpl(GreeterProxyPtr first, GreeterProxyPtr second)
      : first_(std::move(first)), second_(std::move(second)) {}

  Future<helloworld::HelloReply> Route(const ServerContextPtr& ctx,
                                       const helloworld::HelloRequest* req) override;
  Future<helloworld::HelloReply> ParallelRoute(const ServerContextPtr& ctx,
                                               const helloworld::HelloRequest* req) override;

 private:
  GreeterProxyPtr first_;
  GreeterProxyPtr second_;
};

/// The Forward service with its proxies from the process's TrpcClient. Null (with `*err`) when
/// a callee is not configured.
ServicePtr MakeForwardService(std::string* err);

}  // namespace trpc::test::forward
