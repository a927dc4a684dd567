#pragma once

#include <functional>
#include <memory>

#include "trpc/base/status.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/future/future.h"
#include "trpc/server/server_context.h"

namespace trpc {

/// One method of a service: turns the request bytes into a message, runs the user's code and
/// replies. Implementations are stateless apart from the user's function; Handle may run on
/// many threads at once.
class RpcMethodHandler {
 public:
  RpcMethodHandler() : id_(NextId()) {}
  virtual ~RpcMethodHandler() = default;
  RpcMethodHandler(const RpcMethodHandler&) = delete;
  RpcMethodHandler& operator=(const RpcMethodHandler&) = delete;

  /// A small number unique in the process (handlers are numbered as they are made): a server
  /// finds a method's statistics slot by it with an array index instead of a hash.
  uint32_t id() const { return id_; }
  /// Serves the call in `ctx` and sends its reply through SendReply(). May throw only what the
  /// user's code throws (the server turns that into ret 31).
  virtual void Handle(const ServerContextPtr& ctx) = 0;
  /// A streaming method (StreamRpcMethodHandler): opened by a stream, not called by a frame.
  virtual bool IsStream() const { return false; }

 protected:
  // The framework's part of a context, for handlers (generated ones and protocols' own).
  /// The decoded request (body, content type, the protocol's own part).
  static RpcRequest& Request(const ServerContextPtr& ctx);
  /// Sends the reply: `status`, and `body` when the status is OK (null: none). Only a
  /// context's first reply is sent.
  static void SendReply(const ServerContextPtr& ctx, const Status& status,
                        const google::protobuf::MessageLite* body);
  /// Lends the protocol's own reply (on the handler's stack) to the SendReply() that follows.
  static void SetProtocolResponseRef(const ServerContextPtr& ctx, const ProtocolMessage* rsp);
  /// Parses the request body of `ctx` into `msg` as its content type says (protobuf, without
  /// copying when contiguous, or JSON). On failure replies ret 1 (decode error) and returns
  /// false.
  static bool ParseRequest(const ServerContextPtr& ctx, google::protobuf::MessageLite* msg);

 private:
  static uint32_t NextId();

  const uint32_t id_;
};

namespace detail {
/// Called with a handler's non-OK status: when its `ret` is not one of the framework's codes
/// (base/status.h) — almost always a service's own code given to Status(ret, msg), which means a
/// framework error, instead of Status::AppError(code, msg) — logs a warning saying so (at most
/// one a second). The status is sent as it is.
void CheckHandlerRetCode(const ServerContext& ctx, const Status& status);
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
    if (!ParseRequest(ctx, &req)) return;
    Status status = fn_(ctx, &req, &rsp);
    if (!ctx->IsResponse()) return;  // the handler replies later (SetResponse(false))
    if (status.OK() && !ctx->GetStatus().OK()) status = ctx->GetStatus();
    if (status.GetFrameworkRetCode() != 0) [[unlikely]]
      detail::CheckHandlerRetCode(*ctx, status);
    SendReply(ctx, status, &rsp);
  }

 private:
  Function fn_;
};

/// A unary method whose handler returns Future<Rsp> (the generated Async* service classes): the
/// reply goes out when the future resolves, from the thread that resolves it. In the merged
/// model a handler that chains on a downstream call made on its worker therefore replies on that
/// same worker. The request message lives until the reply is sent.
template <typename Req, typename Rsp>
class AsyncUnaryRpcMethodHandler final : public RpcMethodHandler {
 public:
  using Function = std::function<Future<Rsp>(const ServerContextPtr&, const Req*)>;
  explicit AsyncUnaryRpcMethodHandler(Function fn) : fn_(std::move(fn)) {}

  void Handle(const ServerContextPtr& ctx) override {
    auto req = std::make_shared<Req>();
    if (!ParseRequest(ctx, req.get())) return;
    Future<Rsp> fut = fn_(ctx, req.get());
    if (!fut.Valid()) {
      SendReply(ctx, Status(kServerSystemErr, "handler returned an invalid future"), nullptr);
      return;
    }
    if (fut.IsResolved()) {  // answered at once: no continuation, no pending count
      Reply(ctx, std::move(fut));
      return;
    }
    ctx->SetResponse(false);
    std::move(fut).Then([ctx, req](Future<Rsp>&& done) { Reply(ctx, std::move(done)); });
  }

 private:
  static void Reply(const ServerContextPtr& ctx, Future<Rsp>&& done) {
    if (done.IsFailed()) {
      detail::CheckHandlerRetCode(*ctx, done.GetException());
      SendReply(ctx, done.GetException(), nullptr);
      return;
    }
    Rsp rsp = done.GetValue();
    SendReply(ctx, ctx->GetStatus(), &rsp);
  }

  Function fn_;
};

}  // namespace trpc
