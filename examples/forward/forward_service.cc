#include "examples/forward/forward_service.h"

#include "trpc/client/trpc_client.h"
#include "trpc/future/future.h"
#include "trpc/server/make_client_context.h"

namespace trpc::test::forward {

using helloworld::HelloReply;
using helloworld::HelloRequest;

namespace {
// ParallelRoute's answer from both replies: their messages joined, or the first failure.
Status Join(Future<HelloReply>& a, Future<HelloReply>& b, HelloReply* rsp) {
  if (a.IsFailed()) return a.GetException();
  if (b.IsFailed()) return b.GetException();
  rsp->set_msg(a.GetValue().msg() + " | " + b.GetValue().msg());
  return kSuccStatus;
}
}  // namespace

Future<HelloReply> ForwardImpl::Route(const ServerContextPtr& ctx, const HelloRequest* req) {
  return first_->AsyncSayHello(MakeClientContext(ctx, first_), *req);
}

Future<HelloReply> ForwardImpl::ParallelRoute(const ServerContextPtr& ctx,
                                              const HelloRequest* req) {
  return WhenAll(first_->AsyncSayHello(MakeClientContext(ctx, first_), *req),
                 second_->AsyncSayHello(MakeClientContext(ctx, second_), *req))
      .Then([](std::tuple<Future<HelloReply>, Future<HelloReply>>&& results) {
        HelloReply rsp;
        Status st = Join(std::get<0>(results), std::get<1>(results), &rsp);
        return st.OK() ? MakeReadyFuture<HelloReply>(std::move(rsp))
                       : MakeExceptionFuture<HelloReply>(st);
      });
}

ServicePtr MakeForwardService(std::string* err) {
  TrpcClient* client = GetTrpcClient();
  if (client == nullptr) {
    *err = "the runtime and the client must be started first";
    return nullptr;
  }
  auto first = client->GetProxy<helloworld::GreeterServiceProxy>(kRouteCallee, err);
  if (!first) return nullptr;
  auto second = client->GetProxy<helloworld::GreeterServiceProxy>(kParallelCallee2, err);
  if (!second) return nullptr;
  return std::make_shared<ForwardImpl>(std::move(first), std::move(second));
}

}  // namespace trpc::test::forward
