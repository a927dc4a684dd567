#include "trpc/server/grpc/grpc_server.h"

#include <memory>
#include <mutex>
#include <optional>

#include "trpc/base/clock.h"
#include "trpc/server/detail/proto_alias.h"
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

namespace {

using grpc_health::HealthCheckRequest;
using grpc_health::HealthCheckResponse;

HealthCheckResponse::ServingStatus StatusOf(Server::Readiness r) {
  return r == Server::Readiness::kServing ? HealthCheckResponse::SERVING
                                          : HealthCheckResponse::NOT_SERVING;
}

// Whether `service` has a method "/<name>/...".
bool Serves(const Service& service, const std::string& name) {
  const std::string prefix = "/" + name + "/";
  bool served = false;
  service.ForEachMethod([&](const std::string& method, const RpcMethodHandler*) {
    served = served || method.compare(0, prefix.size(), prefix) == 0;
  });
  return served;
}

// One Watch call: sends the status now and at every readiness change, one write at a time,
// until the client cancels (the call's cancel signal), a write fails, or the server stops
// (NOT_SERVING, then the call ends with UNAVAILABLE so that the client watches elsewhere).
//
// Threads: Offer() runs on the control thread (a readiness change) and in the handler; writes
// complete on the stream's loop; mu_ orders them. A readiness change that comes while a write
// is under way replaces the pending status, so the client always ends up with the latest.
class HealthWatch : public std::enable_shared_from_this<HealthWatch> {
 public:
  HealthWatch(Server* server, stream::AsyncStreamWriter<HealthCheckResponse> writer, bool known)
      : server_(server), writer_(std::move(writer)), known_(known) {}

  Future<> Start(const ServerContextPtr& ctx) {
    Future<> done = done_.GetFuture();
    auto self = shared_from_this();
    std::function<void()> unwatch =
        server_->WatchReadiness([self](Server::Readiness r) { self->Offer(r); });
    std::shared_ptr<CancelSignal> cancel = ctx->GetCancelSignal();
    // (Runs End() here if the call was cancelled already.)
    const uint64_t cancel_id = cancel->Subscribe([self](const Status& why) { self->End(why); });
    bool ended;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ended = ended_;
      if (!ended) {  // End() from now on lets go of them
        unwatch_ = unwatch;
        cancel_ = cancel;
        cancel_id_ = cancel_id;
      }
    }
    if (ended) {
      unwatch();
      cancel->Unsubscribe(cancel_id);
      return done;
    }
    Offer(server_->readiness());  // (the handler runs while the server is there)
    return done;
  }

 private:
  void Offer(Server::Readiness r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      pending_ = known_ ? StatusOf(r) : HealthCheckResponse::SERVICE_UNKNOWN;
      stopping_ = stopping_ || r == Server::Readiness::kStopping;
      if (writing_) return;  // the write under way sends the pending status after it
      writing_ = true;
    }
    Pump();
  }

  // Writes pending statuses until none is left (or the call ended).
  void Pump() {
    HealthCheckResponse rsp;
    bool finish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      if (pending_.has_value() && *pending_ != sent_) {
        rsp.set_status(*pending_);
        sent_ = *pending_;
        pending_.reset();
      } else {
        pending_.reset();
        writing_ = false;
        if (!stopping_) return;
        finish = true;
      }
    }
    if (finish) {
      // Stopping, and the client has the last status: the call ends, so that the stop does not
      // wait for it.
      End(Status::AppError(14, "the server is stopping"));
      return;
    }
    auto self = shared_from_this();
    writer_.Write(rsp).Then([self](Future<>&& f) {
      if (f.IsFailed()) {
        self->End(f.GetException());
      } else {
        self->Pump();
      }
      return MakeReadyFuture<>();
    });
  }

  // Once: lets go of the readiness watch and the cancel signal (which hold this object) and
  // ends the call. Any thread; never touches the server, which may be gone by then.
  void End(const Status& why) {
    std::function<void()> unwatch;
    std::shared_ptr<CancelSignal> cancel;
    uint64_t cancel_id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ended_) return;
      ended_ = true;
      unwatch = std::move(unwatch_);
      cancel = std::move(cancel_);
      cancel_id = cancel_id_;
    }
    if (unwatch) unwatch();
    if (cancel != nullptr) cancel->Unsubscribe(cancel_id);
    done_.SetException(why);
  }

  Server* server_;  // only in Start(), while the handler runs
  stream::AsyncStreamWriter<HealthCheckResponse> writer_;
  const bool known_;  // the service asked for is served here ("" always is)
  Promise<> done_;
  std::mutex mu_;  // guards the fields below
  std::function<void()> unwatch_;
  std::shared_ptr<CancelSignal> cancel_;
  uint64_t cancel_id_ = 0;
  std::optional<HealthCheckResponse::ServingStatus> pending_;
  HealthCheckResponse::ServingStatus sent_ = HealthCheckResponse::UNKNOWN;
  bool writing_ = false;
  bool stopping_ = false;
  bool ended_ = false;
};

}  // namespace

void EnableHealth(Server* server) {
  // Server reflection describes our health.proto under gRPC's names.
  trpc::detail::RegisterProtoAlias(
      {HealthCheckRequest::descriptor()->file(), "grpc/health/v1/health.proto", "grpc.health.v1"});
  for (const ServiceConfig& sc : server->config().service) {
    if (sc.protocol != kGrpcCodecName) continue;
    ServicePtr svc = server->GetService(sc.name);
    if (svc == nullptr || svc->FindMethod(kHealthCheckMethod) != nullptr) continue;
    const Service* raw = svc.get();  // (the method lives in the service: no cycle through it)
    svc->AddUnaryMethod<HealthCheckRequest, HealthCheckResponse>(
        kHealthCheckMethod, [server, raw](const ServerContextPtr&, const HealthCheckRequest* req,
                                          HealthCheckResponse* rsp) {
          if (!req->service().empty() && !Serves(*raw, req->service())) {
            return Status::AppError(5, "unknown service " + req->service());
          }
          rsp->set_status(StatusOf(server->readiness()));
          return kSuccStatus;
        });
    if (svc->FindMethod(kHealthWatchMethod) != nullptr) continue;
    // Non-blocking, so it streams in either thread model. As the protocol says, a service not
    // served here gets SERVICE_UNKNOWN and the call stays open.
    svc->AddAsyncServerStreamMethod<HealthCheckRequest, HealthCheckResponse>(
        kHealthWatchMethod,
        [server, raw](const ServerContextPtr& ctx, const HealthCheckRequest& req,
                      const stream::AsyncStreamWriter<HealthCheckResponse>& writer) {
          const bool known = req.service().empty() || Serves(*raw, req.service());
          return std::make_shared<HealthWatch>(server, writer, known)->Start(ctx);
        });
  }
}

}  // namespace trpc::grpc
