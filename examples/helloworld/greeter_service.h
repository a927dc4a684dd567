#pragma once

// Hand-written service base and client proxy for Greeter. The protoc plugin (a later issue)
// generates classes of exactly this shape; until then the example spells them out.

#include <memory>
#include <string>

#include "examples/helloworld/helloworld.pb.h"
#include "trpc/client/service_proxy.h"
#include "trpc/server/service.h"

namespace trpc::test::helloworld {

inline constexpr char kGreeterName[] = "trpc.test.helloworld.Greeter";
inline constexpr char kSayHelloFunc[] = "/trpc.test.helloworld.Greeter/SayHello";

/// Server base: override SayHello.
class Greeter : public ::trpc::Service {
 public:
  Greeter() {
    AddUnaryMethod<HelloRequest, HelloReply>(
        kSayHelloFunc, [this](const ServerContextPtr& ctx, const HelloRequest* req,
                              HelloReply* rsp) { return SayHello(ctx, req, rsp); });
  }
  virtual Status SayHello(const ServerContextPtr& ctx, const HelloRequest* req, HelloReply* rsp) {
    return Status(kServerNoFuncErr, "SayHello is not implemented");
  }
};

/// Client proxy.
class GreeterServiceProxy {
 public:
  explicit GreeterServiceProxy(std::shared_ptr<ServiceProxy> proxy) : proxy_(std::move(proxy)) {}

  Status SayHello(const ClientContextPtr& ctx, const HelloRequest& req, HelloReply* rsp) {
    ctx->SetFuncName(kSayHelloFunc);
    return proxy_->UnaryInvoke(ctx, req, rsp);
  }
  void AsyncSayHello(const ClientContextPtr& ctx, const HelloRequest& req, HelloReply* rsp,
                     ServiceProxy::Done done) {
    ctx->SetFuncName(kSayHelloFunc);
    proxy_->AsyncUnaryInvoke(ctx, req, rsp, std::move(done));
  }
  Status SayHelloOneway(const ClientContextPtr& ctx, const HelloRequest& req) {
    ctx->SetFuncName(kSayHelloFunc);
    return proxy_->OnewayInvoke(ctx, req);
  }
  ServiceProxy* proxy() const { return proxy_.get(); }

 private:
  std::shared_ptr<ServiceProxy> proxy_;
};

}  // namespace trpc::test::helloworld
