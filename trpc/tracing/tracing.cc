#include "trpc/tracing/tracing.h"

#include <time.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string_view>
#include <vector>

#include "trpc/client/client_filter.h"
#include "trpc/server/server_filter.h"
#include "trpc/tracing/detail/exporter.h"
#include "trpc/tracing/detail/span.h"
#include "trpc/tracing/detail/trace_context.h"

namespace trpc::tracing {

using detail::BatchExporter;
using detail::SpanContext;
using detail::SpanData;
using detail::SpanKind;

namespace {

constexpr char kTraceparent[] = "traceparent";
// What a span keeps of text that may come from a peer (the method, an error's message).
constexpr size_t kMaxNameBytes = 256;
constexpr size_t kMaxStatusMessageBytes = 1024;

// The running tracer: the sampler's bound and the exporter. Replaced whole by StartTracing; a
// sampled span keeps a pointer to the tracer it began under (tracers are never freed).
struct Tracer {
  uint64_t sampling_bound = UINT64_MAX;  // detail::SamplingBound(sampler_ratio)
  std::unique_ptr<BatchExporter> exporter;
};

std::mutex g_mu;  // StartTracing / StopTracing
// Read by every call of a filter: an atomic shared_ptr would take a lock in libstdc++, so the
// tracer is published by a raw pointer (acquire/release), and a tracer that a restart or a stop
// replaced is kept, not freed, for the spans that began under it and end later (their end goes
// to its stopped exporter, which counts them as dropped). Kept here, so they stay reachable.
std::atomic<Tracer*> g_tracer{nullptr};
std::vector<std::unique_ptr<Tracer>>* g_retired = new std::vector<std::unique_ptr<Tracer>>;
std::atomic<uint64_t> g_spans_started{0};

int64_t UnixNanos() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// "/pkg.Service/Method" -> ("pkg.Service", "Method"); the span's name is both, slash-joined.
void SplitFunc(std::string_view func, std::string_view* service, std::string_view* method) {
  if (!func.empty() && func[0] == '/') func.remove_prefix(1);
  size_t slash = func.rfind('/');
  *service = slash == std::string_view::npos ? std::string_view() : func.substr(0, slash);
  *method = slash == std::string_view::npos ? func : func.substr(slash + 1);
}

// A sampled call's span, kept in its context between the filter's two points, with the tracer
// that made it (so a restart of tracing meanwhile cannot free it under the call).
struct CallSpan {
  Tracer* tracer;
  std::unique_ptr<SpanData> span;
};

// Starts a call's span: ids and the sampling decision, then, when sampled, the span with the
// attributes known at the start (null when not sampled). `info` is the call's metadata: its
// traceparent (absent or bad: a new trace) is the parent, and is replaced in place by the new
// span's, for the next hop.
std::shared_ptr<CallSpan> BeginSpan(Tracer* t, TransInfo& info, SpanKind kind,
                                    std::string_view func, std::string_view protocol) {
  auto it = info.find(kTraceparent);
  SpanContext parent;
  const bool has_parent = it != info.end() && detail::ParseTraceparent(it->second, &parent);
  SpanContext mine;
  mine.trace_id = has_parent ? parent.trace_id : detail::NewTraceId();
  mine.span_id = detail::NewSpanId();
  mine.sampled =
      has_parent ? parent.sampled : detail::SampledByBound(mine.trace_id, t->sampling_bound);
  if (it == info.end()) it = info.emplace(kTraceparent, std::string()).first;
  detail::FormatTraceparent(mine, &it->second);
  if (!mine.sampled) return nullptr;
  g_spans_started.fetch_add(1, std::memory_order_relaxed);
  auto call = std::make_shared<CallSpan>(CallSpan{t, std::make_unique<SpanData>()});
  SpanData& span = *call->span;
  span.context = mine;
  if (has_parent) span.parent_span_id = parent.span_id;
  std::string_view service, method;
  // A server span's name comes from the peer's request: bounded, so that a queue of spans
  // cannot hold megabytes of a caller's method names.
  SplitFunc(func.substr(0, kMaxNameBytes), &service, &method);
  span.name.reserve(service.size() + 1 + method.size());
  span.name.append(service).append("/").append(method);
  span.kind = kind;
  span.start_unix_ns = UnixNanos();
  span.attributes.reserve(7);
  span.attributes.emplace_back("rpc.system", std::string(protocol));
  span.attributes.emplace_back("rpc.service", std::string(service));
  span.attributes.emplace_back("rpc.method", std::string(method));
  return call;
}

// Ends the span with `st` and hands it to the exporter.
void EndSpan(CallSpan* call, const Status& st, std::string_view protocol) {
  SpanData& span = *call->span;
  span.end_unix_ns = UnixNanos();
  if (protocol == "grpc") {
    // OpenTelemetry's gRPC conventions: the status code as a number (as the gRPC codec maps
    // our codes; a handler's own 1..16 is that code).
    int code =
        st.OK() ? 0
        : st.GetFrameworkRetCode() == 0 && st.GetFuncRetCode() >= 1 && st.GetFuncRetCode() <= 16
            ? st.GetFuncRetCode()
            : 2;
    span.attributes.emplace_back("rpc.grpc.status_code", int64_t{code});
  } else if (protocol == "trpc") {
    span.attributes.emplace_back("rpc.trpc.ret_code", int64_t{st.GetFrameworkRetCode()});
    if (st.GetFuncRetCode() != 0) {
      span.attributes.emplace_back("rpc.trpc.func_ret_code", int64_t{st.GetFuncRetCode()});
    }
  }
  if (!st.OK()) {
    span.error = true;
    span.status_message = st.ErrorMessage().substr(0, kMaxStatusMessageBytes);
  }
  if (call->tracer->exporter) call->tracer->exporter->Enqueue(std::move(call->span));
}

void AddPeer(SpanData* span, const NetAddress& addr, bool server_side) {
  if (addr.port() == 0) return;
  span->attributes.emplace_back(server_side ? "network.peer.address" : "server.address", addr.ip());
  span->attributes.emplace_back(server_side ? "network.peer.port" : "server.port",
                                int64_t{addr.port()});
}

class ServerTracingFilter final : public MessageServerFilter {
 public:
  std::string Name() const override { return kTracingFilterName; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::SERVER_POST_RECV_MSG, FilterPoint::SERVER_PRE_SEND_MSG};
  }
  void operator()(FilterStatus& status, FilterPoint point, const ServerContextPtr& ctx) override {
    status = FilterStatus::CONTINUE;
    if (point == FilterPoint::SERVER_POST_RECV_MSG) {
      Tracer* t = g_tracer.load(std::memory_order_acquire);
      if (t == nullptr) return;
      // Downstream calls made with MakeClientContext(ctx) inherit the new traceparent: their
      // spans are children of this one.
      std::shared_ptr<CallSpan> call = BeginSpan(t, ctx->MutablePbReqTransInfo(), SpanKind::kServer,
                                                 ctx->GetFuncName(), ctx->GetProtocolName());
      if (call == nullptr) return;
      AddPeer(call->span.get(), ctx->GetRemoteAddr(), /*server_side=*/true);
      ctx->SetFilterData(id_, std::move(call));
      return;
    }
    if (CallSpan* call = ctx->GetFilterData<CallSpan>(id_); call != nullptr && call->span) {
      EndSpan(call, ctx->GetStatus(), ctx->GetProtocolName());
    }
    // trpc echoes the request's trans_info in the reply: the span's context would travel
    // back (encoded, parsed, stored) for nothing.
    if (g_tracer.load(std::memory_order_relaxed) != nullptr) {
      ctx->MutablePbReqTransInfo().erase(kTraceparent);
    }
  }

 private:
  const uint32_t id_ = NewFilterDataId();
};

class ClientTracingFilter final : public MessageClientFilter {
 public:
  std::string Name() const override { return kTracingFilterName; }
  std::vector<FilterPoint> GetFilterPoint() override {
    return {FilterPoint::CLIENT_PRE_RPC_INVOKE, FilterPoint::CLIENT_POST_RPC_INVOKE};
  }
  void operator()(FilterStatus& status, FilterPoint point, const ClientContextPtr& ctx) override {
    status = FilterStatus::CONTINUE;
    if (point == FilterPoint::CLIENT_PRE_RPC_INVOKE) {
      Tracer* t = g_tracer.load(std::memory_order_acquire);
      if (t == nullptr) return;
      // The callee's span is a child of this one.
      std::shared_ptr<CallSpan> call = BeginSpan(t, ctx->MutableReqTransInfo(), SpanKind::kClient,
                                                 ctx->GetFuncName(), ctx->GetProtocolName());
      if (call != nullptr) ctx->SetFilterData(id_, std::move(call));
      return;
    }
    if (CallSpan* call = ctx->GetFilterData<CallSpan>(id_); call != nullptr && call->span) {
      AddPeer(call->span.get(), ctx->GetBackend(), /*server_side=*/false);
      EndSpan(call, ctx->GetStatus(), ctx->GetProtocolName());
    }
  }

 private:
  const uint32_t id_ = NewFilterDataId();
};

}  // namespace

bool StartTracing(const TracingConfig& config, const std::string& service_name, std::string* err) {
  std::lock_guard lock(g_mu);
  auto tracer = std::make_unique<Tracer>();
  tracer->sampling_bound = detail::SamplingBound(config.sampler_ratio);
  tracer->exporter = std::make_unique<BatchExporter>(
      config, config.service_name.empty() ? service_name : config.service_name);
  std::string why;
  if (!tracer->exporter->Start(&why)) {
    *err = (config.origin.empty() ? "" : config.origin + ": ") + "plugins.tracing.endpoint: " + why;
    return false;
  }
  Tracer* old = g_tracer.exchange(tracer.release(), std::memory_order_acq_rel);
  if (old != nullptr) {
    old->exporter->Stop();
    g_retired->emplace_back(old);
  }
  return true;
}

void StopTracing() {
  std::lock_guard lock(g_mu);
  Tracer* t = g_tracer.exchange(nullptr, std::memory_order_acq_rel);
  if (t != nullptr) {
    t->exporter->Stop();
    g_retired->emplace_back(t);
  }
}

void RegisterTracingFilters() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterServerFilter(std::make_shared<ServerTracingFilter>());
    RegisterClientFilter(std::make_shared<ClientTracingFilter>());
  });
}

TracingStats GetTracingStats() {
  TracingStats s;
  s.spans_started = g_spans_started.load(std::memory_order_relaxed);
  if (Tracer* t = g_tracer.load(std::memory_order_acquire)) {
    s.enabled = true;
    BatchExporter::Stats e = t->exporter->stats();
    s.spans_exported = e.exported;
    s.spans_dropped = e.dropped;
    s.export_failures = e.export_failures;
  }
  return s;
}

}  // namespace trpc::tracing
