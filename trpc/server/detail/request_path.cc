#include "trpc/server/detail/request_path.h"

#include <fmt/format.h>

#include <exception>
#include <string>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/detail/compression.h"
#include "trpc/server/detail/parked_work.h"

namespace trpc::detail {

RequestPath::RequestPath(const ServiceConfig& config, Service* service, ThreadModel* model,
                         ServerCodec* codec, const ServerFilterChain* filters,
                         ServiceCounters* counters)
    : config_(config),
      service_(service),
      model_(model),
      codec_(codec),
      filters_(filters),
      counters_(counters) {
  if (config.max_concurrency > 0 || config.max_concurrency_auto) {
    limiter_ =
        std::make_unique<ConcurrencyLimiter>(config.max_concurrency, config.max_concurrency_auto,
                                             model->ReactorCount(), model->HandlesInline());
  }
}

void RequestPath::OnFrame(Connection* conn, ChainBuffer&& frame) {
  int64_t recv_ns = conn->reactor()->LoopTimeNs();
  auto* call = new ServerCall(conn->shared_from_this(), codec_, recv_ns);
  ServerContextPtr ctx(call, kAdoptRef);
  std::string err;
  if (!codec_->DecodeRequestWithState(std::move(frame), conn->codec_state(), &call->request(),
                                      &err)) {
    // A header that does not parse gets no reply: the stream can no longer be trusted.
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: bad request from {}: {}", config_.name,
                      conn->peer().ToString(), err);
    conn->Close("protocol error: " + err, CloseCause::kProtocolError);
    return;
  }
  uint32_t timeout_ms = call->request().timeout_ms;
  if (config_.timeout > 0 && (timeout_ms == 0 || config_.timeout < timeout_ms)) {
    timeout_ms = config_.timeout;
  }
  if (timeout_ms > 0) call->SetDeadlineNs(recv_ns + timeout_ms * kNanosPerMilli);
  size_t index = ReactorIndex(conn);
  ServiceCounters::Requests& counters = counters_->requests(index);
  counters.requests.fetch_add(1, std::memory_order_relaxed);
  // Routed here, before the filters, so that every reply (a filter's refusal too) is counted
  // under its method.
  RpcMethodHandler* method = service_->Route(*ctx);
  call->SetMethodCounters(counters_->MethodOf(index, method));
  if (const uint32_t encoding = call->request().content_encoding;
      encoding != 0 && !IsSupportedEncoding(encoding)) [[unlikely]] {
    // A body we cannot decompress must not be read as plain. Ret 1, as tRPC-Go answers it; the
    // reply, which has no body, says encoding 0 (docs/protocol.md).
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    call->SendReply(
        Status(kServerDecodeErr, "unsupported content_encoding " + std::to_string(encoding)),
        nullptr);
    return;
  }
  Status refusal;
  if (!Admit(call, index, recv_ns, counters, &refusal)) [[unlikely]] {
    call->SendReply(refusal, nullptr);
    return;
  }
  // An admitted request runs after the reads (merge too), so refusals do not wait behind it.
  const bool after_reads = limiter_ != nullptr;
  if (!model_->HandlesInline() || after_reads) {
    // Runs later: it counts against the connection's requests in flight until its reply.
    conn->BeginRequest();
    call->SetCountedPending();
  }
  // The thread model runs the request (RunCall) now or later; the reference handed over here
  // keeps the call alive until then.
  Task* task = call->Submit(std::move(ctx), this, method, model_->HandlesInline());
  if (after_reads) {
    model_->SubmitAfterReads(conn->reactor(), task);
  } else {
    model_->Submit(conn->reactor(), task);
  }
}

void RequestPath::RunCall(const ServerContextPtr& ctx, ServerCall& call) {
  Connection* conn = call.connection();
  Reactor* r = conn->reactor();
  // On the connection's own worker (always in merge, the usual case in fiber) the reactor's
  // recent time serves the "too late to start" check: at most one reply old, and a late start
  // is still caught when the reply is sent. Elsewhere, a clock read.
  HandleRequest(ctx, call, counters_->requests(ReactorIndex(conn)),
                r->InLoopThread() ? r->RecentTimeNs() : 0);
}

void RequestPath::HandleRequest(const ServerContextPtr& ctx, ServerCall& call,
                                ServiceCounters::Requests& counters, int64_t now_ns) {
  int64_t deadline = call.GetDeadlineNs();
  if (deadline > 0) {
    if (now_ns == 0) now_ns = MonotonicNanos();
    if (now_ns >= deadline) {
      counters.rejected_deadline_passed.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      call.SendReply(Status(kServerTimeoutErr, "deadline passed before the request was handled"),
                     nullptr);
      return;
    }
    // With a limiter, the service time is known: a request with less time left than that would
    // only be answered late, so its handler's time goes to one that can make it.
    if (limiter_ != nullptr && now_ns + limiter_->service_time_ns() > deadline) {
      counters.rejected_deadline_unmeetable.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      call.SendReply(Status(kServerTimeoutErr,
                            "deadline cannot be met: less time is left than "
                            "the service's no-load latency"),
                     nullptr);
      return;
    }
  }
  RpcMethodHandler* method = call.handler();
  if (method == nullptr) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    call.SendReply(Status(kServerNoFuncErr, "no such function: " + call.GetFuncName()), nullptr);
    return;
  }
  if (call.request().content_encoding != 0) [[unlikely]] {
    // Here rather than on the reactor: inflating up to max_packet_size bytes takes long enough
    // to delay the other connections' reads (fiber model: this runs in the request's fiber).
    RpcRequest& req = call.request();
    ChainBuffer plain;
    std::string err;
    if (!DecompressBody(req.content_encoding, req.body, config_.max_packet_size, &plain, &err)) {
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      call.SendReply(
          Status(kServerDecodeErr, fmt::format("cannot decompress the {} request body: {}",
                                               EncodingName(req.content_encoding), err)),
          nullptr);
      return;
    }
    req.body = std::move(plain);  // content_encoding stays: the reply is compressed the same way
  }
  if (!call.RunFilters(FilterPoint::SERVER_PRE_RPC_INVOKE)) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    call.SendReply(call.GetStatus(), nullptr);
    return;
  }
  call.MarkInvoked();
  if (limiter_ != nullptr) {
    // Where the limiter's service time starts (the queueing before this is measured apart).
    call.SetStartNs(now_ns != 0 ? now_ns : MonotonicNanos());
  }
  try {
    method->Handle(ctx);
  } catch (const std::exception& e) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    call.SendReply(Status(kServerSystemErr, std::string("handler threw: ") + e.what()), nullptr);
  } catch (...) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    call.SendReply(Status(kServerSystemErr, "handler threw a non-std exception"), nullptr);
  }
}

}  // namespace trpc::detail
