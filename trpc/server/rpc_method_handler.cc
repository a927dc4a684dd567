#include "trpc/server/rpc_method_handler.h"

#include <atomic>

#include "trpc/base/logging.h"
#include "trpc/codec/message_body.h"

namespace trpc {

uint32_t RpcMethodHandler::NextId() {
  static std::atomic<uint32_t> next{0};
  return next.fetch_add(1, std::memory_order_relaxed);
}

bool RpcMethodHandler::ParseRequest(const ServerContextPtr& ctx,
                                    google::protobuf::MessageLite* msg) {
  const RpcRequest& req = ctx->request();
  std::string err;
  if (ParseMessageBody(req.body, req.content_type, msg, &err)) return true;
  ctx->SendReply(Status(kServerDecodeErr, std::move(err)), nullptr);
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
