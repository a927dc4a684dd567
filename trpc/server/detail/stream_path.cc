#include "trpc/server/detail/stream_path.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <unordered_set>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/detail/compression.h"
#include "trpc/server/stream_method_handler.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::detail {

/// One connection's streams: its protocol session, and the stream each open id runs as. The
/// session's host (its events) and the streams' link (their output). Frames it writes collect
/// in `out_` and go to the connection after each event. Loop thread only.
class StreamPath::ConnStreams final : public ServerStreamHost, public StreamLink {
 public:
  ConnStreams(StreamPath* path, Connection* conn, std::unique_ptr<ServerStreamSession> session)
      : path_(path), conn_(conn), session_(std::move(session)) {}

  ~ConnStreams() {
    if (backlog_timer_ != 0) conn_->reactor()->CancelTimer(backlog_timer_);
    Status gone(kStreamServerNetworkErr, "the connection closed");
    for (auto& [id, core] : streams_) core->Detach(gone);
  }

  bool OnFrame(ChainBuffer&& frame, std::string* err) {
    bool ok = session_->OnFrame(std::move(frame), this, &out_, err);
    Flush();
    return ok;
  }

  // ServerStreamHost
  void OnStreamOpen(uint32_t id, RpcRequest&& head, ChainBuffer* out) override {
    (void)out;  // == &out_
    path_->Open(this, id, std::move(head));
  }
  void OnStreamMessage(uint32_t id, ChainBuffer&& msg) override {
    auto it = streams_.find(id);
    if (it != streams_.end()) {
      std::shared_ptr<StreamCore> core = it->second;  // what it runs may erase the entry
      core->OnMessage(std::move(msg));
      return;
    }
    // Our side has finished (the handler returned) while the client still sends: dropped,
    // but its window is returned so the client is not left blocked.
    session_->Consumed(id, msg.size(), &out_);
  }
  void OnStreamRemoteEnd(uint32_t id, const Status& status) override {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    std::shared_ptr<StreamCore> core = it->second;
    if (!status.OK()) streams_.erase(it);  // reset: the session has forgotten it too
    core->OnRemoteEnd(status);
  }
  void OnStreamWritable(uint32_t id) override {
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    std::shared_ptr<StreamCore> core = it->second;  // what it runs may erase the entry
    core->OnWritable();
  }

  // StreamLink
  bool CanSend(uint32_t id) override {
    if (!session_->CanSend(id)) return false;
    // Without flow control, the connection's unwritten output is the bound.
    return session_->FlowControlled(id) ||
           conn_->pending_write_bytes() < StreamCore::kNoWindowBacklogBytes;
  }
  void WatchBacklog(StreamCore* core) override {
    backlog_.insert(core->id());
    if (backlog_timer_ != 0) return;
    // The connection tells nobody when its output drains, so a stream waiting for that looks
    // again later (only such streams arm this). A peer that reads nothing must not make us spin:
    // while no byte has left since the last look, each wait doubles, up to 64 ms.
    const uint64_t written = conn_->stats().bytes_out;
    backlog_delay_ms_ =
        written != backlog_seen_out_ ? 1 : std::min<int64_t>(backlog_delay_ms_ * 2, 64);
    backlog_seen_out_ = written;
    backlog_timer_ =
        conn_->reactor()->AddTimer(MonotonicNanos() + backlog_delay_ms_ * kNanosPerMilli, [this] {
          backlog_timer_ = 0;
          std::unordered_set<uint32_t> waiting;
          waiting.swap(backlog_);
          for (uint32_t id : waiting) {
            auto it = streams_.find(id);
            if (it != streams_.end()) it->second->OnWritable();  // re-watches if still blocked
          }
        });
  }
  bool SendMessage(uint32_t id, ChainBuffer&& msg, std::string* err) override {
    bool ok = session_->SendMessage(id, std::move(msg), &out_, err);
    Flush();
    return ok;
  }
  void SetInitialMetadata(uint32_t id, TransInfo&& md) override {
    session_->SetInitialMetadata(id, std::move(md));
  }
  void SetTrailingMetadata(uint32_t id, TransInfo&& md) override {
    session_->SetTrailingMetadata(id, std::move(md));
  }
  void Consumed(uint32_t id, size_t n) override {
    session_->Consumed(id, n, &out_);
    Flush();
  }
  void Finish(StreamCore* core, const Status& status) override {
    const uint32_t id = core->id();
    session_->Finish(id, status, &out_);
    Flush();
    auto it = streams_.find(id);
    if (it == streams_.end() || it->second.get() != core) return;
    std::shared_ptr<StreamCore> keep = std::move(it->second);
    streams_.erase(it);
    // Our side is done: a reader still waiting (the handler has returned, so none) or a reset
    // ends the rest.
    keep->Detach(status.OK() ? Status(kStreamServerWriteEnd, "the stream was finished") : status);
  }

  ServerStreamSession* session() { return session_.get(); }
  Connection* conn() { return conn_; }
  std::unordered_map<uint32_t, std::shared_ptr<StreamCore>>& streams() { return streams_; }
  void Flush() {
    if (!out_.empty() && !conn_->closed()) conn_->SendWire(std::move(out_));
    out_.Clear();
  }
  ChainBuffer* out() { return &out_; }

 private:
  StreamPath* path_;
  Connection* conn_;
  std::unique_ptr<ServerStreamSession> session_;
  std::unordered_map<uint32_t, std::shared_ptr<StreamCore>> streams_;
  ChainBuffer out_;
  std::unordered_set<uint32_t> backlog_;  // streams waiting for the output to drain
  TimerId backlog_timer_ = 0;
  int64_t backlog_delay_ms_ = 1;            // the last wait (doubles while nothing is written)
  uint64_t backlog_seen_out_ = UINT64_MAX;  // bytes the connection had written at the last look
};

StreamPath::StreamPath(const ServiceConfig& config, Service* service, ThreadModel* model,
                       ServerCodec* codec, RequestPath* admission, ServiceCounters* counters)
    : config_(config),
      service_(service),
      model_(model),
      codec_(codec),
      admission_(admission),
      counters_(counters),
      conns_(model->ReactorCount()) {}

StreamPath::~StreamPath() = default;

void StreamPath::OnFrame(Connection* conn, ChainBuffer&& frame) {
  auto& table = conns_[static_cast<size_t>(model_->IndexOf(conn->reactor()))];
  auto it = table.find(conn);
  if (it == table.end()) {
    std::unique_ptr<ServerStreamSession> session =
        codec_->NewStreamSession(config_.max_streams_per_connection, config_.stream_window);
    if (session == nullptr) {
      conn->Close("protocol error: stream frames on a protocol without streams",
                  CloseCause::kProtocolError);
      return;
    }
    it = table.emplace(conn, std::make_unique<ConnStreams>(this, conn, std::move(session))).first;
  }
  std::string err;
  if (!it->second->OnFrame(std::move(frame), &err)) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: bad stream frame from {}: {}",
                      config_.name, conn->peer().ToString(), err);
    conn->Close("protocol error: " + err, CloseCause::kProtocolError);
  }
}

void StreamPath::OnClose(Connection* conn) {
  auto& table = conns_[static_cast<size_t>(model_->IndexOf(conn->reactor()))];
  table.erase(conn);  // its streams end (~ConnStreams)
}

size_t StreamPath::open_streams(size_t reactor) const {
  size_t n = 0;
  for (const auto& [conn, cs] : conns_[reactor]) n += cs->session()->open_streams();
  return n;
}

void StreamPath::Open(ConnStreams* cs, uint32_t id, RpcRequest&& head) {
  Connection* conn = cs->conn();
  const int64_t recv_ns = conn->reactor()->LoopTimeNs();
  auto* call = new ServerCall(conn->shared_from_this(), codec_, recv_ns);
  ServerContextPtr ctx(call, kAdoptRef);
  call->request() = std::move(head);
  const size_t index = static_cast<size_t>(model_->IndexOf(conn->reactor()));
  ServiceCounters::Requests& counters = counters_->requests(index);
  counters.requests.fetch_add(1, std::memory_order_relaxed);
  RpcMethodHandler* method = service_->Route(*ctx);
  call->SetMethodCounters(counters_->MethodOf(index, method));
  const uint32_t encoding = call->request().content_encoding;
  Status refusal;
  auto* stream_method = method != nullptr && method->IsStream()
                            ? static_cast<StreamRpcMethodHandler*>(method)
                            : nullptr;
  if (stream_method == nullptr) {
    refusal = Status(kServerNoFuncErr, "no such streaming method: " + call->GetFuncName());
  } else if (model_->HandlesInline() && !stream_method->IsAsync()) {
    refusal = Status(kServerNoFuncErr, call->GetFuncName() +
                                           " is a blocking stream handler, which the merged "
                                           "model cannot run: register it with the "
                                           "AddAsync*StreamMethod forms (docs/streaming.md)");
  } else if (encoding != 0 && !IsSupportedEncoding(encoding)) {
    refusal = Status(kServerDecodeErr, "unsupported content_encoding " + std::to_string(encoding));
  }
  if (!refusal.OK()) counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
  if (refusal.OK() && !admission_->Admit(call, index, recv_ns, counters, &refusal)) {
    // (Admit counted it)
  }
  if (!refusal.OK()) {
    cs->session()->Refuse(id, refusal, cs->out());
    // The call is a stream's: its reply records the refusal and sends nothing more.
    call->SetStream(
        std::make_shared<StreamCore>(conn->shared_from_this(), id, 0, 0, 0, config_.stream_window));
    call->SendReply(refusal, nullptr);
    return;
  }
  cs->session()->Accept(id, cs->out());
  auto core =
      std::make_shared<StreamCore>(conn->shared_from_this(), id, call->request().content_type,
                                   encoding, config_.max_packet_size, config_.stream_window);
  core->Attach(cs, cs->session()->FlowControlled(id), !cs->session()->CountsUnreadBytes());
  // The stream's timeouts: the service's, and a deadline the client sent (gRPC's grpc-timeout)
  // when sooner.
  int64_t total_ms = config_.stream_timeout;
  const uint32_t asked_ms = call->request().timeout_ms;
  if (asked_ms != 0 && (total_ms == 0 || asked_ms < total_ms)) total_ms = asked_ms;
  core->ArmTimeouts(config_.stream_idle_timeout, total_ms, kServerTimeoutErr);
  cs->streams()[id] = core;
  auto cancel = std::make_shared<CancelSignal>();
  core->SetCancelSignal(cancel);
  call->SetCancelSignal(std::move(cancel));
  call->SetStream(std::move(core));
  // The stream's own task, not the call's: a unary call's dispatch (its reply slot, the
  // in-flight list a stop answers from) is for one reply, and a stream's handler may run for
  // as long as the stream does. Merge runs it inline (it is non-blocking); fiber in a fiber.
  auto* task = new StartTask(this, std::move(ctx), stream_method);
  model_->Submit(conn->reactor(), task);
}

void StreamPath::StartTask::Run() {
  std::unique_ptr<StartTask> self(this);
  path_->RunStream(ctx_, method_);
}

void StreamPath::RunStream(const ServerContextPtr& ctx, StreamRpcMethodHandler* method) {
  ServerCall& call = ServerCall::Of(*ctx);
  std::shared_ptr<StreamCore> core = call.stream();
  handlers_running_.fetch_add(1, std::memory_order_relaxed);
  auto end = [this, ctx, core](const Status& status) {
    if (!status.OK()) {
      counters_
          ->requests(
              static_cast<size_t>(model_->IndexOf(ServerCall::Of(*ctx).connection()->reactor())))
          .failed_requests.fetch_add(1, std::memory_order_relaxed);
    }
    ServerCall& c = ServerCall::Of(*ctx);
    // Records the stream's end and sends nothing; the filters see it first (POST_RPC_INVOKE)
    // and may replace the status, which then ends the stream.
    c.SendReply(status, nullptr);
    // The response metadata (AddRspTransInfo) goes as the stream's trailers.
    core->SetTrailingMetadata(std::move(c.rsp_trans_info()));
    core->Finish(c.GetStatus());
    // The last touch of this path: release, so a stop that reads 0 may free it.
    handlers_running_.fetch_sub(1, std::memory_order_release);
  };
  if (!call.RunFilters(FilterPoint::SERVER_PRE_RPC_INVOKE)) {
    end(call.GetStatus());
    return;
  }
  call.MarkInvoked();
  try {
    method->StartStream(ctx, stream::ServerStream(core), std::move(end));
  } catch (const std::exception& e) {
    // (A handler that threw has not called `done`: the kinds call it only on their way out.)
    end(Status(kServerSystemErr, std::string("handler threw: ") + e.what()));
  } catch (...) {
    end(Status(kServerSystemErr, "handler threw a non-std exception"));
  }
}

}  // namespace trpc::detail
