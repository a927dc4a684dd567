#include "trpc/server/grpc/grpc_server.h"

#include <memory>

namespace trpc::grpc {

namespace {
GrpcReplyOptions* ReplyOptions(ServerContext* ctx) {
  if (GetRequestInfo(*ctx) == nullptr) return nullptr;
  auto* opts = dynamic_cast<GrpcReplyOptions*>(ctx->GetProtocolResponse());
  if (opts == nullptr) {
    auto owned = std::make_unique<GrpcReplyOptions>();
    opts = owned.get();
    ctx->SetProtocolResponse(std::move(owned));
  }
  return opts;
}
}  // namespace

const GrpcRequestInfo* GetRequestInfo(const ServerContext& ctx) {
  return dynamic_cast<const GrpcRequestInfo*>(ctx.GetProtocolRequest());
}

bool IsCancelled(const ServerContext& ctx) {
  const GrpcRequestInfo* info = GetRequestInfo(ctx);
  return info != nullptr && info->cancelled != nullptr &&
         info->cancelled->load(std::memory_order_relaxed);
}

void SetResponseCompression(ServerContext* ctx, std::string encoding) {
  if (GrpcReplyOptions* o = ReplyOptions(ctx)) o->compression = std::move(encoding);
}

void AddInitialMetadata(ServerContext* ctx, std::string key, std::string value) {
  if (GrpcReplyOptions* o = ReplyOptions(ctx)) {
    o->initial_metadata[std::move(key)] = std::move(value);
  }
}

}  // namespace trpc::grpc
