#include "trpc/server/rpc_method_handler.h"

#include <atomic>

#include "trpc/base/logging.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/server/detail/server_call.h"

namespace trpc {

uint32_t RpcMethodHandler::NextId() {
  static std::atomic<uint32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

RpcRequest& RpcMethodHandler::Request(const ServerContextPtr& ctx) {
  return detail::ServerCall::Of(*ctx).request();
}

void RpcMethodHandler::SendReply(const ServerContextPtr& ctx, const Status& status,
                                 const google::protobuf::MessageLite* body) {
  detail::ServerCall::Of(*ctx).SendReply(status, body);
}

void RpcMethodHandler::SetProtocolResponseRef(const ServerContextPtr& ctx,
                                              const ProtocolMessage* rsp) {
  detail::ServerCall::Of(*ctx).SetProtocolResponseRef(rsp);
}

bool RpcMethodHandler::ParseRequest(const ServerContextPtr& ctx,
                                    google::protobuf::MessageLite* msg) {
  detail::ServerCall& call = detail::ServerCall::Of(*ctx);
  const RpcRequest& req = call.request();
  std::string err;
  if (ParseMessageBody(req.body, req.content_type, msg, &err)) return true;
  call.SendReply(Status(kServerDecodeErr, std::move(err)), nullptr);
  return false;
}

}  // namespace trpc

namespace trpc::detail {

void CheckHandlerRetCode(const ServerContext& ctx, const Status& status) {
  int32_t ret = status.GetFrameworkRetCode();
  if (IsFrameworkRetCode(ret)) return;
  TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                    "{}: the handler answered framework code {}, which is not one of the "
                    "framework's; for the service's own code use Status::AppError({}, msg) "
                    "(docs/errors.md)",
                    ctx.GetFuncName(), ret, ret);
}

}  // namespace trpc::detail
