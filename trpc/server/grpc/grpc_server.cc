#include "trpc/server/grpc/grpc_server.h"

#include <memory>

#include "trpc/base/clock.h"
#include "trpc/server/detail/server_call.h"
#include "trpc/server/grpc/health.pb.h"
#include "trpc/transport/detail/stream_core.h"

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
  if (info == nullptr) return false;
  if (info->cancelled != nullptr && info->cancelled->cancelled()) return true;
  // Past its deadline the client has given up too (as in gRPC); this also holds where the reset
  // cannot be read meanwhile (a merge worker busy in this very handler).
  return ctx.GetDeadlineNs() > 0 && MonotonicNanos() > ctx.GetDeadlineNs();
}

void SetResponseCompression(ServerContext* ctx, std::string encoding) {
  if (const auto& stream = trpc::detail::ServerCall::Of(*ctx).stream()) {
    // A streaming call: every message from the first (before it is written), when the client
    // accepts the encoding. (The key is the gRPC stream session's; it is not sent.)
    stream->AddInitialMetadata("grpc-encoding", std::move(encoding));
    return;
  }
  if (GrpcReplyOptions* o = ReplyOptions(ctx)) o->compression = std::move(encoding);
}

void AddInitialMetadata(ServerContext* ctx, std::string key, std::string value) {
  if (const auto& stream = trpc::detail::ServerCall::Of(*ctx).stream()) {
    // A streaming call's headers go with its first message.
    stream->AddInitialMetadata(std::move(key), std::move(value));
    return;
  }
  if (GrpcReplyOptions* o = ReplyOptions(ctx)) {
    o->initial_metadata[std::move(key)] = std::move(value);
  }
}

void EnableHealth(Server* server) {
  using grpc_health::HealthCheckRequest;
  using grpc_health::HealthCheckResponse;
  for (const ServiceConfig& sc : server->config().service) {
    if (sc.protocol != kGrpcCodecName) continue;
    ServicePtr svc = server->GetService(sc.name);
    if (svc == nullptr || svc->FindMethod(kHealthCheckMethod) != nullptr) continue;
    const Service* raw = svc.get();  // (the method lives in the service: no cycle through it)
    svc->AddUnaryMethod<HealthCheckRequest, HealthCheckResponse>(
        kHealthCheckMethod, [server, raw](const ServerContextPtr&, const HealthCheckRequest* req,
                                          HealthCheckResponse* rsp) {
          if (!req->service().empty()) {
            const std::string prefix = "/" + req->service() + "/";
            bool served = false;
            raw->ForEachMethod([&](const std::string& name, const RpcMethodHandler*) {
              served = served || name.compare(0, prefix.size(), prefix) == 0;
            });
            if (!served) return Status::AppError(5, "unknown service " + req->service());
          }
          rsp->set_status(server->readiness() == Server::Readiness::kServing
                              ? HealthCheckResponse::SERVING
                              : HealthCheckResponse::NOT_SERVING);
          return kSuccStatus;
        });
  }
}

}  // namespace trpc::grpc
