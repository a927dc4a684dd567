#pragma once

#include <functional>
#include <memory>

#include "trpc/base/status.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/server/server_context.h"

namespace trpc {

/// One method of a service: turns the request bytes into a message, runs the user's code and
/// replies. Implementations are stateless apart from the user's function; Handle may run on
/// many threads at once.
class RpcMethodHandler {
 public:
  virtual ~RpcMethodHandler() = default;
  /// Serves the call in `ctx` and sends its reply through ctx->SendReply(). May throw only what
  /// the user's code throws (the server turns that into ret 31).
  virtual void Handle(const ServerContextPtr& ctx) = 0;
};

namespace detail {
/// Parses a protobuf message from a chain buffer without copying when it is contiguous.
bool ParseMessage(const ChainBuffer& body, google::protobuf::MessageLite* msg);
}  // namespace detail

/// A unary method whose request and response are protobuf messages. The messages live on the
/// handler's stack: no allocation besides what protobuf does for their fields.
template <typename Req, typename Rsp>
class UnaryRpcMethodHandler final : public RpcMethodHandler {
 public:
  using Function = std::function<Status(const ServerContextPtr&, const Req*, Rsp*)>;
  explicit UnaryRpcMethodHandler(Function fn) : fn_(std::move(fn)) {}

  void Handle(const ServerContextPtr& ctx) override {
    Req req;
    Rsp rsp;
    if (!detail::ParseMessage(ctx->request().body, &req)) {
      ctx->SendReply(Status(kServerDecodeErr, "cannot parse the request body"), nullptr);
      return;
    }
    Status status = fn_(ctx, &req, &rsp);
    if (status.OK() && !ctx->GetStatus().OK()) status = ctx->GetStatus();
    ctx->SendReply(status, &rsp);
  }

 private:
  Function fn_;
};

}  // namespace trpc
