#include "trpc/client/service_proxy.h"

#include <google/protobuf/message_lite.h>

#include <atomic>
#include <latch>
#include <vector>

#include "fmt/format.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/base/suggest.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/client/detail/attempts.h"
#include "trpc/client/detail/call_sender.h"
#include "trpc/client/detail/client_counters.h"
#include "trpc/client/detail/client_streams.h"
#include "trpc/client/detail/codec_options.h"
#include "trpc/client/detail/endpoint_set.h"
#include "trpc/client/detail/outlier_ejection.h"
#include "trpc/client/detail/overload_throttle.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/codec/detail/compression.h"
#include "trpc/codec/detail/message_body.h"
#include "trpc/fiber/event.h"
#include "trpc/naming/load_balancer.h"
#include "trpc/naming/selector.h"
#include "trpc/runtime/detail/thread_model.h"

namespace trpc {

using detail::AttemptGroup;
using detail::Backend;
using detail::BackendPtr;
using detail::BackendSet;
using detail::OutgoingCall;

namespace {
// A protocol that answers in order pools this many connections per backend per reactor unless
// max_conn_num says otherwise (tRPC-Cpp's default pool size).
constexpr uint32_t kDefaultPoolSize = 64;
// How long making a proxy may wait for its selector's first endpoint list.
constexpr uint32_t kFirstListWaitMs = 3000;

// The transport's deadline for a call: its own, or, for a call with none, a timer far away so
// that nothing waits forever.
int64_t TransportDeadline(int64_t deadline, int64_t now) {
  return deadline > 0 ? deadline : now + 3600 * kNanosPerSecond;
}

// What a request still allows, in whole milliseconds rounded up; 0 without a deadline.
uint32_t TimeoutMs(int64_t deadline, int64_t now) {
  return deadline > 0
             ? static_cast<uint32_t>((deadline - now + kNanosPerMilli - 1) / kNanosPerMilli)
             : 0;
}

// The host part of a "host:port" target ("[v6]:port" included), or the whole target when it
// has no port (an etcd service name): what a TLS certificate names.
std::string TargetHost(const std::string& target) {
  std::string first = target.substr(0, target.find(','));
  if (!first.empty() && first[0] == '[') {
    size_t close = first.find(']');
    return close == std::string::npos ? first : first.substr(1, close - 1);
  }
  size_t colon = first.rfind(':');
  return colon == std::string::npos ? first : first.substr(0, colon);
}
// The callee's target as a URI for the metrics (gRPC's grpc.target): gRPC writes a target
// without a scheme as dns:///, and our direct selector takes the same host:port lists.
std::string TargetUri(const ClientServiceConfig& c) {
  const std::string scheme =
      c.selector_name == "direct" || c.selector_name.empty() ? "dns" : c.selector_name;
  return scheme + ":///" + c.target;
}
}  // namespace

// Everything behind ServiceProxy's public surface: the call's way in (filters, deadline,
// throttle, encoding) and out (decoding, figures), over the parts that each do one job: the
// endpoint set, outlier ejection, the sender and the attempts of calls under a policy.
class ServiceProxy::Impl final : public detail::AttemptHost {
 public:
  Impl(ClientServiceConfig config, ThreadModel* model)
      : config_(std::move(config)),
        model_(model),
        attempts_(config_, this, model->ReactorCount()) {}
  ~Impl() override { Stop(); }
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget) { buffer_budget_ = std::move(budget); }

  bool Init(std::string* err);
  void Stop();
  void AsyncUnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                        google::protobuf::MessageLite* rsp, Done done);
  Status OnewayInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req);
  void AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done);

  const ClientServiceConfig& config() const { return config_; }
  ThreadModel* model() const { return model_; }

  // detail::AttemptHost.
  int64_t Now() override { return MonotonicNanos(); }
  // The protocol's own status of `st` for the metrics (-1: the protocol has none).
  int WireStatus(const Status& st) override {
    return wire_status_ ? codec_->WireStatus(st.GetFrameworkRetCode(), st.GetFuncRetCode()) : -1;
  }
  bool Stopped() override { return sender_->stopped(); }
  bool RefusesExtraAttempt(int64_t now) override {
    return throttle_ != nullptr && throttle_->ShouldRefuse(now);
  }
  std::shared_ptr<OutgoingCall> PrepareAttempt(const std::shared_ptr<AttemptGroup>& group,
                                               int64_t now, Status* st) override;
  void SendAttempt(AttemptGroup& group, std::shared_ptr<OutgoingCall> call) override {
    sender_->Send(group.reactor, std::move(call));
  }
  void CancelAttempt(OutgoingCall& call) override { sender_->Cancel(call); }
  TimerId AddTimer(AttemptGroup& group, int64_t at_ns, std::function<void()> fn) override {
    return group.reactor->AddTimer(at_ns, std::move(fn));
  }
  void CancelTimer(AttemptGroup& group, TimerId id) override { group.reactor->CancelTimer(id); }

  // Opens a stream to ctx's function on a chosen endpoint; `done` gets the stream's end once the
  // server has answered (or why there is none), on a reactor thread.
  void AsyncOpenStream(
      const ClientContextPtr& ctx,
      std::function<void(const Status&, std::shared_ptr<detail::StreamCore>)> done);

 private:
  // The three ways a call's end reaches its caller.
  struct ProxyCall : OutgoingCall {
    explicit ProxyCall(Impl* p) : proxy(p) {}
    // The call has ended: it no longer listens to its context's cancel signal.
    void Unwatch() {
      if (cancel_sub != 0) ctx->GetCancelSignal()->Unsubscribe(cancel_sub);
    }
    // When an attempt's reply came: the reactor's latest clock reading (no clock read of its
    // own: the replies of one wake-up share the time it woke at), or a fresh reading where the
    // proxy needs an exact one (an endpoint's live latency, hedging's latency window).
    int64_t EndTime() const {
      if (tracked || proxy->attempts_.tracks_latency() || reactor == nullptr) {
        const int64_t now = MonotonicNanos();
        if (reactor != nullptr) reactor->NoteTime(now);
        return now;
      }
      return reactor->RecentTimeNs();
    }
    // The call has ended with `st` (at `now`): counted in its method, if it is counted.
    void CountEnd(const Status& st, int64_t now) {
      if (method != nullptr) {
        method->End(now - start_ns, st.GetFrameworkRetCode(), st.GetFuncRetCode(),
                    proxy->WireStatus(st));
      }
    }
    Impl* const proxy;
    ClientContextPtr ctx;
    uint64_t cancel_sub = 0;  // WatchCancel's subscription (0: none)
    // Its method's counters (null for a one-way call or an attempt: the group counts those).
    detail::ClientMethodCounters* method = nullptr;
  };
  // AsyncUnaryInvoke: the reply decoded into `rsp`.
  struct UnaryCall final : ProxyCall {
    using ProxyCall::ProxyCall;
    void OnReply(Status st, ChainBuffer&& frame) override {
      Unwatch();
      st = proxy->Decode(ctx, rsp, std::move(st), std::move(frame));
      const int64_t now = EndTime();
      proxy->NoteEnd(*this, st, now, method);
      CountEnd(st, now);
      ctx->SetStatus(st);
      done(st);
    }
    google::protobuf::MessageLite* rsp = nullptr;
    Done done;
  };
  // AsyncInvokeFrame: the frame handed back undecoded (the throttle sees the transport's
  // status only).
  struct FrameCall final : ProxyCall {
    using ProxyCall::ProxyCall;
    void OnReply(Status st, ChainBuffer&& frame) override {
      Unwatch();
      const int64_t now = EndTime();
      proxy->NoteEnd(*this, st, now, method);
      CountEnd(st, now);
      ctx->SetStatus(st);
      done(st, std::move(frame));
    }
    FrameDone done;
  };
  // One attempt of a call under a retry or hedging policy.
  struct AttemptCall final : ProxyCall {
    AttemptCall(Impl* p, std::shared_ptr<AttemptGroup> g) : ProxyCall(p), group(std::move(g)) {}
    void OnReply(Status st, ChainBuffer&& frame) override {
      // A hedge that lost: its reply is not decoded (the winner's is in the response already,
      // and the caller may have let go of it).
      if (!group->finished) st = proxy->Decode(ctx, group->rsp, std::move(st), std::move(frame));
      proxy->NoteEnd(*this, st, EndTime(), group->method);
      proxy->attempts_.OnAttemptDone(group, *this, st);
    }
    const std::shared_ptr<AttemptGroup> group;
  };

  // A call made with a served call's context (MakeClientContext) ends with 161 when that call is
  // cancelled: on its reactor (`call->reactor`, set), where it lives. Before it is sent.
  static void WatchCancel(const std::shared_ptr<ProxyCall>& call);
  // The same for a call under a policy: the group ends, its attempts in flight are cancelled.
  void WatchCancel(const std::shared_ptr<AttemptGroup>& group);
  // Computes the call's deadline and asks the overload throttle; false with `*st` when the
  // call must not go (a throttle refusal is counted in `method`, when given).
  bool Admit(const ClientContextPtr& ctx, int64_t now, int64_t* deadline, Status* st,
             detail::ClientMethodCounters* method = nullptr);
  // Fills `*r` (what the caller left empty) from the context; runs PRE_SEND_MSG filters.
  bool FillRequest(const ClientContextPtr& ctx, RpcRequest* r, uint32_t call_type, int64_t now,
                   int64_t deadline, Status* st);
  // Chooses the endpoint (avoiding `tried`, if given), gives the request its id and encodes
  // it into `call`.
  bool Dispatch(const ClientContextPtr& ctx, RpcRequest* r,
                const google::protobuf::MessageLite* body_msg, ProxyCall* call,
                const std::vector<BackendPtr>* tried, int64_t now, Status* st);
  // The reply's status, with the body parsed into `rsp` when it succeeded.
  // Replaces a compressed reply body by its plain bytes; false with `*err` when it does not
  // decompress within max_packet_size.
  bool DecompressResponse(RpcResponse* rsp, std::string* err) const;
  Status Decode(const ClientContextPtr& ctx, google::protobuf::MessageLite* rsp, Status st,
                ChainBuffer&& frame);
  // After an attempt ended with `st` at `now`: the endpoint's live figures, outlier ejection,
  // the hedging latency window, the overload throttle and, for a protocol with statuses of its
  // own, the attempt's latency in `method` (when counted).
  void NoteEnd(OutgoingCall& call, const Status& st, int64_t now,
               detail::ClientMethodCounters* method);
  // A counted call that ends with `st` before anything was sent (refused, or not encodable):
  // it starts and ends here.
  void CountUnsent(detail::ClientMethodCounters* method, const Status& st) {
    method->Start();
    method->End(0, st.GetFrameworkRetCode(), st.GetFuncRetCode(), WireStatus(st));
  }
  // An attempt of a counted call went out.
  static void CountAttempt(detail::ClientMethodCounters* method) {
    detail::ClientMethodCounters::Add(method->Local().attempts);
  }
  Reactor* PickReactor();
  // Runs the filters at `point`; on a REJECT returns false with the reason in ctx's status.
  bool RunFilters(FilterPoint point, const ClientContextPtr& ctx);
  // Wraps `done` so that a call that got past PRE_RPC_INVOKE meets POST_RPC_INVOKE with its
  // final status; false (and `reject` called) when PRE_RPC_INVOKE rejected the call.
  template <typename DoneFn, typename Reject>
  bool WrapInvokeFilters(const ClientContextPtr& ctx, DoneFn* done, Reject&& reject);

  ClientServiceConfig config_;
  ThreadModel* model_;
  std::shared_ptr<ClientCodec> codec_;
  detail::ClientFilterChain filters_;
  std::unique_ptr<detail::OverloadThrottle> throttle_;  // overload_throttle: true
  std::shared_ptr<Selector> selector_;
  std::shared_ptr<BufferBudget> buffer_budget_;  // client.max_buffered_bytes; null: no bound
  // This callee's counters (docs/observability.md), shared with its other proxies.
  std::shared_ptr<detail::ClientCounters> counters_;
  bool wire_status_ = false;  // the codec has statuses of its own (ClientCodec::WireStatus)
  std::unique_ptr<detail::EndpointSet> endpoints_;
  std::unique_ptr<detail::OutlierEjection> ejection_;
  std::unique_ptr<detail::CallSender> sender_;
  detail::Attempts attempts_;
  // Last: the selector's callbacks (into endpoints_) end before anything else goes.
  std::unique_ptr<SelectorSubscription> subscription_;
  std::atomic<uint32_t> next_request_id_{0};
  bool initialized_ = false;
  std::atomic<bool> stopped_{false};
};

bool ServiceProxy::Impl::Init(std::string* err) {
  std::string where = config_.origin.empty() ? "" : config_.origin + ": ";
  codec_ = CodecRegistry::Instance().GetClient(config_.protocol);
  if (!codec_) {
    *err = where + "client " + config_.name + ": unknown protocol '" + config_.protocol + "'";
    return false;
  }
  if (!config_.protocol_options.empty()) {
    codec_ = ClientCodecWithOptions(codec_, config_, err);
    if (!codec_) return false;
  }
  std::string missing;
  if (!filters_.Build(config_.filter, &missing)) {
    *err = where + "client " + config_.name + ": no client filter named '" + missing +
           "' is registered" + filters_.UnknownNameHint(missing);
    return false;
  }
  PickerMaker make_picker = LoadBalancerFactory::Find(config_.load_balance_name);
  if (!make_picker) {
    *err = where + "client " + config_.name + ": no load balancer named '" +
           config_.load_balance_name + "' is registered" +
           RegisteredNamesHint(config_.load_balance_name, LoadBalancerFactory::Names());
    return false;
  }
  std::string why;
  selector_ = SelectorFactory::Get(config_.selector_name, &why);
  if (!selector_) {
    // A plug-in's own settings errors carry their own "file:line".
    *err = why.find(": ") != std::string::npos && why.rfind("no selector", 0) != 0
               ? why
               : where + "client " + config_.name + ": " + why;
    return false;
  }
  counters_ = detail::ClientCounters::For(config_.name, config_.protocol, TargetUri(config_));
  wire_status_ = codec_->WireStatus(0, 0) >= 0;
  detail::CallSender::Options o;
  o.connection.open_gauge = counters_->connections();
  o.fifo = codec_->FifoResponses();
  o.conns_per_backend = config_.max_conn_num > 0 ? config_.max_conn_num
                        : o.fifo                 ? kDefaultPoolSize
                                                 : 1;
  o.short_conn = config_.conn_type == "short";
  o.pipeline_depth = config_.pipeline_depth;
  o.connect_timeout_ms = config_.connect_timeout;
  o.connection.idle_timeout_ms = 0;  // a client's connection stays until the server closes it
  o.connection.max_packet_size = config_.max_packet_size;
  if (config_.ssl.enable) {
    o.connection.tls = TlsContext::Create(config_.ssl, TlsRole::kClient, codec_->Alpn(), err);
    if (o.connection.tls == nullptr) {
      *err = where + "client " + config_.name + ": " + *err;
      return false;
    }
    // The name the server's certificate must carry: a dns target's host, an etcd target's
    // service name; for direct targets each endpoint's IP (CallSender::OptionsFor).
    if (config_.selector_name != "direct") o.connection.tls_host = TargetHost(config_.target);
  }
  sender_ = std::make_unique<detail::CallSender>(model_, codec_.get(), std::move(o));
  if (buffer_budget_) sender_->SetBufferBudget(buffer_budget_);
  endpoints_ = std::make_unique<detail::EndpointSet>(model_, config_.name, std::move(make_picker),
                                                     sender_->ConnsPerBackend());
  ejection_ = std::make_unique<detail::OutlierEjection>(config_.outlier_ejection, config_.name,
                                                        endpoints_.get());
  ejection_->CountInto(counters_->ejections());
  if (config_.overload_throttle) throttle_ = std::make_unique<detail::OverloadThrottle>();
  SelectorTarget target{config_.target, config_.name_space, config_.name, config_.origin};
  subscription_ = selector_->Subscribe(
      target, kFirstListWaitMs, [this](std::vector<Endpoint> list) { endpoints_->Update(list); },
      err);
  if (!subscription_) return false;
  initialized_ = true;
  return true;
}

void ServiceProxy::Impl::Stop() {
  // A proxy that never initialized has no connections (and may outlive its thread model).
  if (!initialized_ || stopped_.exchange(true)) return;
  sender_->Stop();
  subscription_.reset();  // no list comes after this
  std::vector<BackendPtr> alive = endpoints_->Stop();
  const size_t reactors = model_->ReactorCount();
  std::latch done(static_cast<std::ptrdiff_t>(reactors));
  for (size_t i = 0; i < reactors; ++i) {
    model_->GetReactor(i)->RunInLoop([this, i, &alive, &done] {
      // Closing fails the calls still pending with 141; their callbacks run here, while the
      // proxy is alive. Calls between attempts (a retry's back-off, a hedge's delay) have no
      // connection to fail them: Attempts ends them, cancelling their timers.
      sender_->CloseOnLoop(i, alive);
      endpoints_->DropCopyOnLoop(i);
      attempts_.StopOnLoop(i);
      done.count_down();
    });
  }
  done.wait();
  endpoints_->Clear();
}

bool ServiceProxy::Impl::RunFilters(FilterPoint point, const ClientContextPtr& ctx) {
  std::string rejected_by;
  if (filters_.Run(point, ctx, &rejected_by)) return true;
  if (ctx->GetStatus().OK()) {
    ctx->SetStatus(Status(kUnknownErr, "rejected by client filter " + rejected_by));
  }
  return false;
}

template <typename DoneFn, typename Reject>
bool ServiceProxy::Impl::WrapInvokeFilters(const ClientContextPtr& ctx, DoneFn* done,
                                           Reject&& reject) {
  if (filters_.Empty()) return true;
  ctx->SetProtocolName(codec_->Name());
  ctx->SetStatus(Status());
  if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) {
    reject(ctx->GetStatus());
    return false;
  }
  *done = [this, ctx, inner = std::move(*done)](const Status& st, auto&&... frame) {
    ctx->SetStatus(st);
    RunFilters(FilterPoint::CLIENT_POST_RPC_INVOKE, ctx);
    inner(ctx->GetStatus(), std::forward<decltype(frame)>(frame)...);
  };
  return true;
}

Reactor* ServiceProxy::Impl::PickReactor() {
  Reactor* current = Reactor::Current();
  if (current != nullptr && model_->IndexOf(current) >= 0) return current;
  return model_->NextReactor();
}

bool ServiceProxy::Impl::Admit(const ClientContextPtr& ctx, int64_t now, int64_t* deadline_out,
                               Status* st, detail::ClientMethodCounters* method) {
  uint32_t timeout_ms = ctx->GetTimeout() > 0 ? ctx->GetTimeout() : config_.timeout;
  int64_t deadline = timeout_ms > 0 ? now + timeout_ms * kNanosPerMilli : 0;
  if (ctx->GetDeadlineNs() > 0 && (deadline == 0 || ctx->GetDeadlineNs() < deadline)) {
    deadline = ctx->GetDeadlineNs();
  }
  if (deadline > 0 && deadline <= now) {
    *st = Status(kClientFullLinkTimeoutErr, "no time left for the call");
    return false;
  }
  if (throttle_ != nullptr && throttle_->ShouldRefuse(now)) {
    if (method != nullptr) detail::ClientMethodCounters::Add(method->Local().throttle_refusals);
    *st = Status(kClientLimitedErr, "refused by the client's overload throttle: " + config_.name +
                                        " has been answering 'overloaded'");
    return false;
  }
  *deadline_out = deadline;
  return true;
}

bool ServiceProxy::Impl::FillRequest(const ClientContextPtr& ctx, RpcRequest* req_in,
                                     uint32_t call_type, int64_t now, int64_t deadline,
                                     Status* st) {
  RpcRequest& r = *req_in;
  r.call_type = call_type;
  r.timeout_ms = TimeoutMs(deadline, now);
  r.caller = ctx->GetCaller();
  r.callee = config_.name;
  if (r.func.empty()) r.func = ctx->GetFuncName();
  if (!filters_.Empty() && !RunFilters(FilterPoint::CLIENT_PRE_SEND_MSG, ctx)) {
    *st = ctx->GetStatus();
    return false;
  }
  r.trans_info = ctx->GetReqTransInfo();
  r.content_encoding = ctx->GetReqCompressType();
  if (!ctx->GetRequestAttachment().empty()) [[unlikely]] {
    r.attachment.AppendShared(ctx->GetRequestAttachment());
  }
  if (const uint32_t type = ctx->GetReqEncodeType(); type != 0) r.content_type = type;
  return true;
}

bool ServiceProxy::Impl::Dispatch(const ClientContextPtr& ctx, RpcRequest* r,
                                  const google::protobuf::MessageLite* body_msg, ProxyCall* call,
                                  const std::vector<BackendPtr>* tried, int64_t now, Status* st) {
  std::shared_ptr<const BackendSet> hold;
  const BackendSet* set = endpoints_->Current(&hold);
  if (set->backends.empty()) {
    *st =
        Status(kClientRouterErr, "no endpoint for client " + config_.name + " (selector " +
                                     config_.selector_name + ", target '" + config_.target + "')");
    return false;
  }
  call->backend = detail::ChooseBackend(*set, *ctx, tried, now);
  Backend* b = call->backend.get();
  call->slot = sender_->NextSlot(*b);
  r->request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (r->request_id == 0) {
    r->request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  r->authority = b->name;
  if (!codec_->EncodeRequest(r, body_msg, &call->request)) {
    *st = Status(kClientEncodeErr, "cannot encode the request");
    return false;
  }
  call->request_id = r->request_id;
  call->call_type = r->call_type;
  call->start_ns = now;
  call->ctx = ctx;
  ctx->SetBackend(b->addr);
  // A one-way call never finishes: only calls that end count as in flight.
  if (set->track_stats && r->call_type != kOnewayCall) {
    b->stats.OnStart();
    call->tracked = true;
  }
  return true;
}

bool ServiceProxy::Impl::DecompressResponse(RpcResponse* rsp, std::string* err) const {
  ChainBuffer plain;
  std::string why;
  // Bounded like the frame that carried it: a small reply cannot inflate without limit.
  if (!detail::DecompressBody(rsp->content_encoding, rsp->body, config_.max_packet_size, &plain,
                              &why)) {
    *err = "cannot decompress the " + std::string(detail::EncodingName(rsp->content_encoding)) +
           " response body: " + why;
    return false;
  }
  rsp->body = std::move(plain);
  return true;
}

Status ServiceProxy::Impl::Decode(const ClientContextPtr& ctx, google::protobuf::MessageLite* msg,
                                  Status st, ChainBuffer&& frame) {
  if (!st.OK()) return st;
  RpcResponse rsp;
  std::string err;
  if (!codec_->DecodeResponse(std::move(frame), &rsp, &err)) {
    st = Status(kClientDecodeErr, "bad response: " + err);
  } else if (rsp.ret != 0 || rsp.func_ret != 0) {
    st = Status(rsp.ret, rsp.func_ret, std::move(rsp.error_msg));
  } else if (rsp.content_encoding != 0 && !DecompressResponse(&rsp, &err)) [[unlikely]] {
    st = Status(kClientDecodeErr, std::move(err));
  } else {
    bool ok;
    if (rsp.content_type != kContentTypeProtobuf) [[unlikely]] {
      ok = ParseMessageBody(rsp.body, rsp.content_type, msg, &err);
    } else if (rsp.body.SpanCount() <= 1) {
      std::string_view s = rsp.body.FirstSpan();
      ok = msg->ParseFromArray(s.data(), static_cast<int>(s.size()));
    } else {
      ChainBufferInputStream in(&rsp.body);
      ok = msg->ParseFromZeroCopyStream(&in);
    }
    if (!ok) {
      st = Status(kClientDecodeErr,
                  err.empty() ? std::string("cannot parse the response body") : std::move(err));
    }
  }
  ctx->MutableRspTransInfo() = std::move(rsp.trans_info);
  ctx->MutableResponseAttachment() = std::move(rsp.attachment);
  if (!filters_.Empty()) {
    ctx->SetStatus(st);
    if (!RunFilters(FilterPoint::CLIENT_POST_RECV_MSG, ctx)) st = ctx->GetStatus();
  }
  return st;
}

void ServiceProxy::Impl::NoteEnd(OutgoingCall& call, const Status& st, int64_t now,
                                 detail::ClientMethodCounters* method) {
  const int ret = st.GetFrameworkRetCode();
  if (wire_status_ && method != nullptr) method->EndAttempt(now - call.start_ns, WireStatus(st));
  if (Backend* b = call.backend.get(); b != nullptr) {
    if (call.tracked) b->stats.OnEnd(now - call.start_ns);
    if (attempts_.tracks_latency() && st.OK()) attempts_.OnLatency(now, now - call.start_ns);
    ejection_->OnResult(*b, ret, now);
  }
  // The callee accepted the call unless it answered "overloaded" or the call timed out (an
  // overloaded callee that sheds nothing shows up as timeouts); a cancelled hedge says nothing.
  if (throttle_ != nullptr && ret != kClientCanceledErr) {
    throttle_->OnResult(now, ret != kServerOverloadErr && ret != kClientInvokeTimeoutErr &&
                                 ret != kClientFullLinkTimeoutErr);
  }
}

std::shared_ptr<OutgoingCall> ServiceProxy::Impl::PrepareAttempt(
    const std::shared_ptr<AttemptGroup>& group, int64_t now, Status* st) {
  RpcRequest a;
  static_cast<RpcRequestHead&>(a) = group->head;
  a.timeout_ms = TimeoutMs(group->deadline_ns, now);
  a.body.AppendShared(group->body);
  a.attachment.AppendShared(group->attachment);
  auto call = std::make_shared<AttemptCall>(this, group);
  if (!Dispatch(group->ctx, &a, nullptr, call.get(), &group->tried, now, st)) return nullptr;
  if (group->method != nullptr) CountAttempt(group->method);
  call->deadline_ns = TransportDeadline(group->deadline_ns, now);
  call->reactor = group->reactor;
  return call;
}

namespace {
Status CancelledWith(const Status& why) {
  return Status(kClientCanceledErr,
                "cancelled with the call it was made for: " + why.ErrorMessage());
}
}  // namespace

void ServiceProxy::Impl::WatchCancel(const std::shared_ptr<ProxyCall>& call) {
  const std::shared_ptr<CancelSignal>& signal = call->ctx->GetCancelSignal();
  if (signal == nullptr) return;
  // Weak: the subscription must not keep a finished call alive. Posted, never run inline: the
  // signal fires inside a connection's close, where a caller's callback must not run.
  std::weak_ptr<OutgoingCall> weak = call;
  call->cancel_sub = signal->Subscribe([weak](const Status& why) {
    if (std::shared_ptr<OutgoingCall> c = weak.lock()) {
      Reactor* r = c->reactor;
      r->Post([c = std::move(c), st = CancelledWith(why)] { detail::CancelOnLoop(*c, st); });
    }
  });
}

void ServiceProxy::Impl::WatchCancel(const std::shared_ptr<AttemptGroup>& group) {
  const std::shared_ptr<CancelSignal>& signal = group->ctx->GetCancelSignal();
  if (signal == nullptr) return;
  std::weak_ptr<AttemptGroup> weak = group;
  group->cancel_sub = signal->Subscribe([this, weak](const Status& why) {
    if (std::shared_ptr<AttemptGroup> g = weak.lock()) {
      Reactor* r = g->reactor;
      // (A finished group is not touched: the proxy may be gone by then; an unfinished one
      // means it is not, as stopping finishes every group.)
      r->Post([this, g = std::move(g), st = CancelledWith(why)] {
        if (!g->finished) attempts_.Cancel(g, st);
      });
    }
  });
}

void ServiceProxy::Impl::AsyncUnaryInvoke(const ClientContextPtr& ctx,
                                          const google::protobuf::MessageLite& req,
                                          google::protobuf::MessageLite* rsp, Done done) {
  if (!WrapInvokeFilters(ctx, &done, [&done](const Status& st) { done(st); })) return;
  const int64_t now = MonotonicNanos();
  detail::ClientMethodCounters* method = counters_->Method(ctx->GetFuncName());
  int64_t deadline = 0;
  Status st;
  RpcRequest r;
  if (!Admit(ctx, now, &deadline, &st, method) ||
      !FillRequest(ctx, &r, kUnaryCall, now, deadline, &st)) {
    CountUnsent(method, st);
    ctx->SetStatus(st);
    done(st);
    return;
  }
  if (attempts_.Covers(r.func)) {
    // More than one attempt may go: the message is serialized once and each attempt encodes
    // its own request around it (its own id, and endpoint).
    ChainBuffer body;
    std::string err;
    if (!SerializeMessageBody(req, r.content_type, &body, &err, kTrpcJsonStyle)) {
      st = Status(kClientEncodeErr, "cannot encode the request: " + err);
      CountUnsent(method, st);
      ctx->SetStatus(st);
      done(st);
      return;
    }
    std::shared_ptr<AttemptGroup> group = attempts_.NewGroup(r.func, now);
    group->body = std::move(body);
    group->attachment = std::move(r.attachment);
    group->ctx = ctx;
    group->rsp = rsp;
    group->done = std::move(done);
    group->head = std::move(static_cast<RpcRequestHead&>(r));
    group->deadline_ns = deadline;
    group->method = method;
    group->start_ns = now;
    method->Start();  // its attempts count as they go (PrepareAttempt)
    group->reactor = PickReactor();
    group->reactor_index = static_cast<size_t>(model_->IndexOf(group->reactor));
    WatchCancel(group);
    group->reactor->RunInLoop([this, group] { attempts_.Begin(group); });
    return;
  }
  auto call = std::make_shared<UnaryCall>(this);
  if (!Dispatch(ctx, &r, &req, call.get(), nullptr, now, &st)) {
    CountUnsent(method, st);
    ctx->SetStatus(st);
    done(st);
    return;
  }
  method->StartAndSend();
  call->method = method;
  call->deadline_ns = TransportDeadline(deadline, now);
  call->rsp = rsp;
  call->done = std::move(done);
  Reactor* reactor = PickReactor();
  call->reactor = reactor;
  WatchCancel(call);
  sender_->Send(reactor, std::move(call));
}

Status ServiceProxy::Impl::OnewayInvoke(const ClientContextPtr& ctx,
                                        const google::protobuf::MessageLite& req) {
  if (!codec_->SupportsOneway()) {
    return Status(kClientEncodeErr, "protocol " + std::string(codec_->Name()) +
                                        " has no one-way calls (client service " + config_.name +
                                        ")");
  }
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) return ctx->GetStatus();
  }
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  // A one-way call has no reply: its OnReply never runs.
  auto call = std::make_shared<FrameCall>(this);
  Status st;
  RpcRequest r;
  if (!Admit(ctx, now, &deadline, &st) || !FillRequest(ctx, &r, kOnewayCall, now, deadline, &st) ||
      !Dispatch(ctx, &r, &req, call.get(), nullptr, now, &st)) {
    return st;
  }
  call->deadline_ns = TransportDeadline(deadline, now);
  sender_->Send(PickReactor(), std::move(call));
  return Status();
}

void ServiceProxy::Impl::AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req,
                                          FrameDone done) {
  if (!WrapInvokeFilters(ctx, &done, [&done](const Status& st) { done(st, ChainBuffer()); })) {
    return;
  }
  const int64_t now = MonotonicNanos();
  detail::ClientMethodCounters* method =
      counters_->Method(req.func.empty() ? ctx->GetFuncName() : req.func);
  int64_t deadline = 0;
  auto call = std::make_shared<FrameCall>(this);
  Status st;
  if (!Admit(ctx, now, &deadline, &st, method) ||
      !FillRequest(ctx, &req, kUnaryCall, now, deadline, &st) ||
      !Dispatch(ctx, &req, nullptr, call.get(), nullptr, now, &st)) {
    CountUnsent(method, st);
    ctx->SetStatus(st);
    done(st, ChainBuffer());
    return;
  }
  method->StartAndSend();
  call->method = method;
  call->deadline_ns = TransportDeadline(deadline, now);
  call->done = std::move(done);
  Reactor* reactor = PickReactor();
  call->reactor = reactor;
  WatchCancel(call);
  sender_->Send(reactor, std::move(call));
}

void ServiceProxy::Impl::AsyncOpenStream(
    const ClientContextPtr& ctx,
    std::function<void(const Status&, std::shared_ptr<detail::StreamCore>)> done) {
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  Status st;
  RpcRequest req;
  if (!Admit(ctx, now, &deadline, &st) || !FillRequest(ctx, &req, kUnaryCall, now, deadline, &st)) {
    done(st, nullptr);
    return;
  }
  std::shared_ptr<const BackendSet> hold;
  const BackendSet* set = endpoints_->Current(&hold);
  if (set->backends.empty()) {
    done(Status(kClientRouterErr, "no endpoint for client " + config_.name), nullptr);
    return;
  }
  BackendPtr backend = detail::ChooseBackend(*set, *ctx, nullptr, now);
  const size_t slot = sender_->NextSlot(*backend);
  ctx->SetBackend(backend->addr);
  // The open waits for the server's answer at most as long as a call would (the stream itself
  // has no deadline: it lasts as long as both ends keep it).
  const int64_t open_deadline = TransportDeadline(deadline, now);
  auto head = std::make_shared<RpcRequest>(std::move(req));
  head->authority = backend->name;  // (gRPC's :authority; `backend` is kept below)
  sender_->WithConnection(
      PickReactor(), backend, slot,
      [this, head, backend, open_deadline, done = std::move(done)](ClientConnection* conn,
                                                                   const Status& cst) {
        if (conn == nullptr) {
          done(cst, nullptr);
          return;
        }
        auto* streams = detail::ClientStreams::Of(conn, codec_.get());
        if (streams == nullptr) {
          done(Status(kClientEncodeErr, "protocol " + std::string(codec_->Name()) +
                                            " has no streams we can open yet"),
               nullptr);
          return;
        }
        auto core_slot = std::make_shared<std::shared_ptr<detail::StreamCore>>();
        Status st;
        *core_slot = streams->Open(
            *head, config_.max_packet_size, open_deadline,
            [done, core_slot](const Status& opened) {
              done(opened, opened.OK() ? *core_slot : nullptr);
            },
            &st);
        if (*core_slot == nullptr) {
          done(st, nullptr);
        } else if (streams->opens_at_once()) {
          done(kSuccStatus, *core_slot);
        }
      });
}

// ServiceProxy: the public surface, forwarding to Impl.

ServiceProxy::ServiceProxy(ClientServiceConfig config, ThreadModel* model)
    : impl_(std::make_unique<Impl>(std::move(config), model)) {}

ServiceProxy::~ServiceProxy() = default;

bool ServiceProxy::Init(std::string* err) { return impl_->Init(err); }
void ServiceProxy::SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
  impl_->SetBufferBudget(std::move(budget));
}
void ServiceProxy::Stop() { impl_->Stop(); }
const ClientServiceConfig& ServiceProxy::config() const { return impl_->config(); }
ThreadModel* ServiceProxy::thread_model() const { return impl_->model(); }

void ServiceProxy::AsyncUnaryInvoke(const ClientContextPtr& ctx,
                                    const google::protobuf::MessageLite& req,
                                    google::protobuf::MessageLite* rsp, Done done) {
  impl_->AsyncUnaryInvoke(ctx, req, rsp, std::move(done));
}

Status ServiceProxy::OnewayInvoke(const ClientContextPtr& ctx,
                                  const google::protobuf::MessageLite& req) {
  return impl_->OnewayInvoke(ctx, req);
}

void ServiceProxy::AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done) {
  impl_->AsyncInvokeFrame(ctx, std::move(req), std::move(done));
}

Status ServiceProxy::UnaryInvoke(const ClientContextPtr& ctx,
                                 const google::protobuf::MessageLite& req,
                                 google::protobuf::MessageLite* rsp) {
  return UnaryInvoke(ctx, req, rsp, "AsyncUnaryInvoke");
}

Status ServiceProxy::UnaryInvoke(const ClientContextPtr& ctx,
                                 const google::protobuf::MessageLite& req,
                                 google::protobuf::MessageLite* rsp, std::string_view async_name) {
  return WaitFor(ctx, async_name,
                 [&](Done done) { AsyncUnaryInvoke(ctx, req, rsp, std::move(done)); });
}

Status ServiceProxy::OpenStream(const ClientContextPtr& ctx, stream::ClientStream* out) {
  auto opened = std::make_shared<std::shared_ptr<detail::StreamCore>>();
  Status st = WaitFor(ctx, "AsyncOpenStream", [&](Done done) {
    impl_->AsyncOpenStream(ctx, [opened, done = std::move(done)](
                                    const Status& s, std::shared_ptr<detail::StreamCore> core) {
      *opened = std::move(core);
      done(s);
    });
  });
  ctx->SetStatus(st);
  if (st.OK()) *out = stream::ClientStream(std::move(*opened), ctx->GetCancelSignal());
  return st;
}

Future<stream::ClientStream> ServiceProxy::AsyncOpenStream(const ClientContextPtr& ctx) {
  // (std::function needs a copyable callback: the move-only promise is shared.)
  auto promise = std::make_shared<Promise<stream::ClientStream>>();
  Future<stream::ClientStream> future = promise->GetFuture();
  impl_->AsyncOpenStream(
      ctx, [ctx, promise](const Status& s, std::shared_ptr<detail::StreamCore> core) {
        ctx->SetStatus(s);
        if (s.OK()) {
          promise->SetValue(stream::ClientStream(std::move(core), ctx->GetCancelSignal()));
        } else {
          promise->SetException(s);
        }
      });
  return future;
}

bool ServiceProxy::MayBlock(const ClientContextPtr& ctx, std::string_view async_name) {
  if (impl_->model()->MayBlockCurrentThread()) return true;
  std::string why = fmt::format(
      "a synchronous call to {} would block a merge worker thread (merged thread model); call "
      "{} instead (it returns a Future), or run the server in the fiber model",
      config().name, async_name);
  // Logged as well: the caller may drop the status, and the fix is in the code, not the peer.
  TRPC_LOG_EVERY_MS(log::Level::kError, 10000, "{}", why);
  ctx->SetStatus(Status(kServerSystemErr, std::move(why)));
  return false;
}

// The status is written before Set(), which orders it before Wait() returns.
struct ServiceProxy::SyncWait::State {
  fiber::Event done;
  Status status;
};

ServiceProxy::SyncWait::SyncWait() : state_(std::make_shared<State>()) {}
ServiceProxy::SyncWait::~SyncWait() = default;

ServiceProxy::Done ServiceProxy::SyncWait::Callback() {
  return [state = state_](const Status& st) {
    state->status = st;
    state->done.Set();
  };
}

Status ServiceProxy::SyncWait::Wait() {
  state_->done.Wait();
  return state_->status;
}

}  // namespace trpc
