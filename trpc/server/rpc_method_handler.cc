#include "trpc/server/rpc_method_handler.h"

#include <atomic>

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
