#include "trpc/server/stream_method_handler.h"

namespace trpc {

void StreamRpcMethodHandler::Handle(const ServerContextPtr& ctx) {
  SendReply(ctx,
            Status(kServerNoFuncErr, ctx->GetFuncName() + " is a streaming method: open a stream"),
            nullptr);
}

}  // namespace trpc
