#include "trpc/client/service_proxy.h"

#include <google/protobuf/message_lite.h>

#include <atomic>
#include <latch>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/client/detail/codec_options.h"
#include "trpc/client/detail/overload_throttle.h"
#include "trpc/codec/codec.h"
#include "trpc/codec/message_body.h"
#include "trpc/fiber/event.h"
#include "trpc/runtime/thread_model.h"
#include "trpc/transport/client_connection.h"
#include "trpc/transport/client_connection_pool.h"

namespace trpc {

namespace {
// A protocol that answers in order pools this many connections per backend per reactor unless
// max_conn_num says otherwise (tRPC-Cpp's default pool size).
constexpr uint32_t kDefaultPoolSize = 64;
}  // namespace

// Everything behind ServiceProxy's public surface.
class ServiceProxy::Impl {
 public:
  Impl(ClientServiceConfig config, ThreadModel* model);
  ~Impl() { Stop(); }

  bool Init(std::string* err);
  void Stop();
  void AsyncUnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                        google::protobuf::MessageLite* rsp, Done done);
  Status OnewayInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req);
  void AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done);

  const ClientServiceConfig& config() const { return config_; }
  ThreadModel* model() const { return model_; }

 private:
  struct Call;
  // Fills `*r` (what the caller left empty) and encodes it into `call`.
  bool Prepare(const ClientContextPtr& ctx, RpcRequest* r,
               const google::protobuf::MessageLite* body_msg, uint32_t call_type, Call* call,
               Status* st);
  void StartOnLoop(Reactor* reactor, std::shared_ptr<Call> call);
  // Decodes a reply (or takes a failure) into the call's Status and runs its callback.
  void Finish(Call* call, Status st, ChainBuffer&& frame);
  // Tells the overload throttle (if any) how a call that it let through ended.
  void NoteForThrottle(const Status& st);
  ClientConnectionPool* GetPool(size_t reactor_index, size_t backend);
  ClientConnectionPtr GetConnection(size_t reactor_index, size_t backend, size_t slot, Status* st);
  ClientConnectionPtr Connect(size_t reactor_index, size_t backend, Status* st);
  Reactor* PickReactor();
  // Runs the filters at `point`; on a REJECT returns false with the reason in ctx's status.
  bool RunFilters(FilterPoint point, const ClientContextPtr& ctx);

  ClientServiceConfig config_;
  ThreadModel* model_;
  std::shared_ptr<ClientCodec> codec_;
  detail::ClientFilterChain filters_;
  std::unique_ptr<detail::OverloadThrottle> throttle_;  // overload_throttle: true
  std::vector<NetAddress> backends_;
  std::vector<std::string> backend_names_;  // "ip:port" of backends_[i] (a request's authority)
  // conns_[reactor][backend * conns_per_backend_ + k]: touched only on that reactor's thread.
  std::vector<std::vector<ClientConnectionPtr>> conns_;
  // Short connections per reactor, until they close: touched only on that reactor's thread.
  std::vector<std::unordered_map<ClientConnection*, ClientConnectionPtr>> short_conns_;
  // Protocols that answer in order: pools_[reactor][backend], made on first use; touched only
  // on that reactor's thread.
  std::vector<std::vector<std::unique_ptr<ClientConnectionPool>>> pools_;
  ConnectionOptions conn_options_;
  std::atomic<uint32_t> next_request_id_{0};
  std::atomic<uint32_t> next_backend_{0};
  uint32_t conns_per_backend_ = 1;
  bool short_conn_ = false;
  bool fifo_ = false;  // the protocol answers in order: pools_ instead of conns_
  bool initialized_ = false;
  std::atomic<bool> stopped_{false};
};

// One call on its way: the encoded request and what to do with the reply.
struct ServiceProxy::Impl::Call {
  ChainBuffer request;
  uint32_t request_id = 0;
  uint32_t call_type = kUnaryCall;
  int64_t deadline_ns = 0;
  size_t backend = 0;
  size_t slot = 0;  // which of the backend's connections
  ClientContextPtr ctx;
  google::protobuf::MessageLite* rsp = nullptr;
  Done done;
  FrameDone frame_done;  // AsyncInvokeFrame: the frame goes back undecoded
};

ServiceProxy::Impl::Impl(ClientServiceConfig config, ThreadModel* model)
    : config_(std::move(config)),
      model_(model),
      conns_(model->ReactorCount()),
      short_conns_(model->ReactorCount()),
      pools_(model->ReactorCount()) {}

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
  std::string bad;
  if (!NetAddress::ParseList(config_.target, &backends_, &bad)) {
    *err = where + "client " + config_.name + ": bad target '" + bad + "'";
    return false;
  }
  if (backends_.empty()) {
    *err = where + "client " + config_.name + ": no target";
    return false;
  }
  for (const NetAddress& b : backends_) backend_names_.push_back(b.ToString());
  fifo_ = codec_->FifoResponses();
  conns_per_backend_ = config_.max_conn_num > 0 ? config_.max_conn_num
                       : fifo_                  ? kDefaultPoolSize
                                                : 1;
  short_conn_ = config_.conn_type == "short";
  if (fifo_) {
    for (auto& per_reactor : pools_) per_reactor.resize(backends_.size());
  } else {
    for (auto& per_reactor : conns_) per_reactor.resize(backends_.size() * conns_per_backend_);
  }
  conn_options_.idle_timeout_ms = 0;  // a client's connection stays until the server closes it
  conn_options_.max_packet_size = config_.max_packet_size;
  if (config_.overload_throttle) throttle_ = std::make_unique<detail::OverloadThrottle>();
  initialized_ = true;
  return true;
}

void ServiceProxy::Impl::Stop() {
  // A proxy that never initialized has no connections (and may outlive its thread model).
  if (!initialized_ || stopped_.exchange(true)) return;
  std::latch done(static_cast<std::ptrdiff_t>(conns_.size()));
  for (size_t i = 0; i < conns_.size(); ++i) {
    model_->GetReactor(i)->RunInLoop([this, i, &done] {
      // Closing fails the calls still pending with 141; their callbacks run here, while the
      // proxy is alive.
      for (auto& c : conns_[i]) {
        if (c) c->Close("proxy stopped");
        c.reset();
      }
      auto shorts = std::move(short_conns_[i]);
      short_conns_[i].clear();
      for (auto& [raw, c] : shorts) c->Close("proxy stopped");
      for (auto& pool : pools_[i]) {
        if (pool) pool->Close("proxy stopped");
        pool.reset();
      }
      done.count_down();
    });
  }
  done.wait();
}

bool ServiceProxy::Impl::RunFilters(FilterPoint point, const ClientContextPtr& ctx) {
  std::string rejected_by;
  if (filters_.Run(point, ctx, &rejected_by)) return true;
  if (ctx->GetStatus().OK()) {
    ctx->SetStatus(Status(kUnknownErr, "rejected by client filter " + rejected_by));
  }
  return false;
}

Reactor* ServiceProxy::Impl::PickReactor() {
  Reactor* current = Reactor::Current();
  if (current != nullptr && model_->IndexOf(current) >= 0) return current;
  return model_->NextReactor();
}

bool ServiceProxy::Impl::Prepare(const ClientContextPtr& ctx, RpcRequest* req_in,
                                 const google::protobuf::MessageLite* body_msg, uint32_t call_type,
                                 Call* call, Status* st) {
  RpcRequest& r = *req_in;
  int64_t now = MonotonicNanos();
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
    *st = Status(kClientLimitedErr, "refused by the client's overload throttle: " + config_.name +
                                        " has been answering 'overloaded'");
    return false;
  }
  r.call_type = call_type;
  r.request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (r.request_id == 0)
    r.request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  r.timeout_ms = deadline > 0
                     ? static_cast<uint32_t>((deadline - now + kNanosPerMilli - 1) / kNanosPerMilli)
                     : 0;
  r.caller = ctx->GetCaller();
  r.callee = config_.name;
  if (r.func.empty()) r.func = ctx->GetFuncName();
  if (!filters_.Empty() && !RunFilters(FilterPoint::CLIENT_PRE_SEND_MSG, ctx)) {
    *st = ctx->GetStatus();
    return false;
  }
  r.trans_info = ctx->GetReqTransInfo();
  r.compress_type = ctx->GetReqCompressType();
  // One counter picks the backend (round-robin) and, every backends_.size() calls, the next of
  // its max_conn_num connections (a pool picks its own).
  uint32_t n = next_backend_.fetch_add(1, std::memory_order_relaxed);
  call->backend = n % backends_.size();
  call->slot = call->backend * conns_per_backend_ + (n / backends_.size()) % conns_per_backend_;
  r.authority = backend_names_[call->backend];
  if (!codec_->EncodeRequest(&r, body_msg, &call->request)) {
    *st = Status(kClientEncodeErr, "cannot encode the request");
    return false;
  }
  call->request_id = r.request_id;
  call->call_type = call_type;
  // A call with no deadline still gets a timer, far away, so nothing waits forever.
  call->deadline_ns = deadline > 0 ? deadline : now + 3600 * kNanosPerSecond;
  call->ctx = ctx;
  ctx->SetBackend(backends_[call->backend]);
  return true;
}

ClientConnectionPtr ServiceProxy::Impl::GetConnection(size_t reactor_index, size_t backend,
                                                      size_t slot, Status* st) {
  if (!short_conn_) {
    ClientConnectionPtr& c = conns_[reactor_index][slot];
    if (c && c->usable()) return c;
    c = Connect(reactor_index, backend, st);
    return c;
  }
  // conn_type "short": a connection per call, owned by short_conns_ until it closes.
  ClientConnectionPtr c = Connect(reactor_index, backend, st);
  if (c) {
    auto& table = short_conns_[reactor_index];
    table.emplace(c.get(), c);
    c->set_close_callback([&table](ClientConnection* closed) { table.erase(closed); });
  }
  return c;
}

ClientConnectionPtr ServiceProxy::Impl::Connect(size_t reactor_index, size_t backend, Status* st) {
  auto c = std::make_shared<ClientConnection>(model_->GetReactor(reactor_index), backends_[backend],
                                              codec_.get(), conn_options_, config_.connect_timeout);
  std::string err;
  if (!c->Connect(&err)) {
    *st = Status(kClientConnectErr, err);
    return nullptr;
  }
  return c;
}

ClientConnectionPool* ServiceProxy::Impl::GetPool(size_t reactor_index, size_t backend) {
  std::unique_ptr<ClientConnectionPool>& pool = pools_[reactor_index][backend];
  if (!pool) {
    ClientConnectionPool::Options o;
    o.max_connections = conns_per_backend_;
    o.max_outstanding = std::max<uint32_t>(1, config_.pipeline_depth);
    o.connect_timeout_ms = config_.connect_timeout;
    o.connection = conn_options_;
    pool = std::make_unique<ClientConnectionPool>(model_->GetReactor(reactor_index),
                                                  backends_[backend], codec_.get(), o);
  }
  return pool.get();
}

void ServiceProxy::Impl::StartOnLoop(Reactor* reactor, std::shared_ptr<Call> call) {
  auto run = [this, reactor, call]() mutable {
    size_t index = static_cast<size_t>(model_->IndexOf(reactor));
    if (stopped_.load(std::memory_order_acquire)) {
      if (call->done || call->frame_done) {
        Finish(call.get(), Status(kClientNetworkErr, "proxy stopped"), ChainBuffer());
      }
      return;
    }
    Call* c = call.get();
    if (fifo_ && !short_conn_) {
      ClientConnectionPool* pool = GetPool(index, c->backend);
      if (c->call_type == kOnewayCall) {
        pool->SendOneway(std::move(c->request));
        return;
      }
      pool->Call(c->request_id, std::move(c->request), c->deadline_ns,
                 [this, call = std::move(call)](Status st, ChainBuffer&& frame) {
                   Finish(call.get(), std::move(st), std::move(frame));
                 });
      return;
    }
    Status st;
    ClientConnectionPtr conn = GetConnection(index, c->backend, c->slot, &st);
    if (conn == nullptr) {
      if (c->done || c->frame_done) Finish(c, std::move(st), ChainBuffer());
      return;
    }
    if (c->call_type == kOnewayCall) {
      conn->SendOneway(std::move(c->request));
      if (short_conn_) conn->CloseAfterFlush();
      return;
    }
    // A short connection closes when its call completes (short_conns_ owns it until then).
    ClientConnection* close_when_done = short_conn_ ? conn.get() : nullptr;
    conn->Call(c->request_id, std::move(c->request), c->deadline_ns,
               [this, call = std::move(call), close_when_done](Status st, ChainBuffer&& frame) {
                 Finish(call.get(), std::move(st), std::move(frame));
                 if (close_when_done) close_when_done->Close("short connection done");
               });
  };
  if (reactor->InLoopThread()) {
    run();
  } else {
    reactor->Post(std::move(run));
  }
}

void ServiceProxy::Impl::Finish(Call* call, Status st, ChainBuffer&& frame) {
  if (call->frame_done) {
    // Handed back undecoded: the throttle sees the transport's status only.
    NoteForThrottle(st);
    call->ctx->SetStatus(st);
    call->frame_done(st, std::move(frame));
    return;
  }
  if (st.OK()) {
    RpcResponse rsp;
    std::string err;
    if (!codec_->DecodeResponse(std::move(frame), &rsp, &err)) {
      st = Status(kClientDecodeErr, "bad response: " + err);
    } else if (rsp.ret != 0 || rsp.func_ret != 0) {
      st = Status(rsp.ret, rsp.func_ret, std::move(rsp.error_msg));
    } else {
      bool ok;
      if (rsp.content_type == kContentTypeJson) {
        ok = ParseMessageBody(rsp.body, kContentTypeJson, call->rsp, &err);
      } else if (rsp.body.SpanCount() <= 1) {
        std::string_view s = rsp.body.FirstSpan();
        ok = call->rsp->ParseFromArray(s.data(), static_cast<int>(s.size()));
      } else {
        ChainBufferInputStream in(&rsp.body);
        ok = call->rsp->ParseFromZeroCopyStream(&in);
      }
      if (!ok) st = Status(kClientDecodeErr, "cannot parse the response body");
    }
    call->ctx->MutableRspTransInfo() = std::move(rsp.trans_info);
    if (!filters_.Empty()) {
      call->ctx->SetStatus(st);
      if (!RunFilters(FilterPoint::CLIENT_POST_RECV_MSG, call->ctx)) {
        st = call->ctx->GetStatus();
      }
    }
  }
  NoteForThrottle(st);
  call->ctx->SetStatus(st);
  call->done(st);
}

void ServiceProxy::Impl::NoteForThrottle(const Status& st) {
  if (throttle_ == nullptr) return;
  // The callee accepted the call unless it answered "overloaded" or the call timed out (an
  // overloaded callee that sheds nothing shows up as timeouts).
  int ret = st.GetFrameworkRetCode();
  throttle_->OnResult(MonotonicNanos(), ret != kServerOverloadErr &&
                                            ret != kClientInvokeTimeoutErr &&
                                            ret != kClientFullLinkTimeoutErr);
}

void ServiceProxy::Impl::AsyncUnaryInvoke(const ClientContextPtr& ctx,
                                          const google::protobuf::MessageLite& req,
                                          google::protobuf::MessageLite* rsp, Done done) {
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) {
      done(ctx->GetStatus());
      return;
    }
    // Every call that got past PRE_RPC_INVOKE meets POST_RPC_INVOKE, with its final status.
    done = [this, ctx, done = std::move(done)](const Status& st) {
      ctx->SetStatus(st);
      RunFilters(FilterPoint::CLIENT_POST_RPC_INVOKE, ctx);
      done(ctx->GetStatus());
    };
  }
  auto call = std::make_shared<Call>();
  Status st;
  RpcRequest r;
  if (!Prepare(ctx, &r, &req, kUnaryCall, call.get(), &st)) {
    ctx->SetStatus(st);
    done(st);
    return;
  }
  call->rsp = rsp;
  call->done = std::move(done);
  StartOnLoop(PickReactor(), std::move(call));
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
  auto call = std::make_shared<Call>();
  Status st;
  RpcRequest r;
  if (!Prepare(ctx, &r, &req, kOnewayCall, call.get(), &st)) return st;
  StartOnLoop(PickReactor(), std::move(call));
  return Status();
}

void ServiceProxy::Impl::AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req,
                                          FrameDone done) {
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) {
      done(ctx->GetStatus(), ChainBuffer());
      return;
    }
    done = [this, ctx, done = std::move(done)](const Status& st, ChainBuffer&& frame) {
      ctx->SetStatus(st);
      RunFilters(FilterPoint::CLIENT_POST_RPC_INVOKE, ctx);
      done(ctx->GetStatus(), std::move(frame));
    };
  }
  auto call = std::make_shared<Call>();
  Status st;
  if (!Prepare(ctx, &req, nullptr, kUnaryCall, call.get(), &st)) {
    ctx->SetStatus(st);
    done(st, ChainBuffer());
    return;
  }
  call->frame_done = std::move(done);
  StartOnLoop(PickReactor(), std::move(call));
}

// ServiceProxy: the public surface, forwarding to Impl.

ServiceProxy::ServiceProxy(ClientServiceConfig config, ThreadModel* model)
    : impl_(std::make_unique<Impl>(std::move(config), model)) {}

ServiceProxy::~ServiceProxy() = default;

bool ServiceProxy::Init(std::string* err) { return impl_->Init(err); }
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
  return WaitFor(ctx, "AsyncUnaryInvoke",
                 [&](Done done) { AsyncUnaryInvoke(ctx, req, rsp, std::move(done)); });
}

bool ServiceProxy::MayBlock(const ClientContextPtr& ctx, std::string_view async_name) {
  if (impl_->model()->MayBlockCurrentThread()) return true;
  ctx->SetStatus(Status(
      kServerSystemErr,
      "a synchronous call would block a merge worker thread; use " + std::string(async_name)));
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
