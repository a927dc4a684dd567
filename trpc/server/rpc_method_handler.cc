#include "trpc/server/rpc_method_handler.h"

#include "trpc/codec/message_body.h"

namespace trpc::detail {

bool ParseRequest(const ServerContextPtr& ctx, google::protobuf::MessageLite* msg) {
  const RpcRequest& req = ctx->request();
  std::string err;
  if (ParseMessageBody(req.body, req.content_type, msg, &err)) return true;
  ctx->SendReply(Status(kServerDecodeErr, std::move(err)), nullptr);
  return false;
}

}  // namespace trpc::detail
