#include "trpc/server/detail/server_call.h"

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/reactor/reactor.h"
#include "trpc/server/detail/concurrency_limiter.h"
#include "trpc/server/detail/in_flight.h"
#include "trpc/server/detail/method_counters.h"
#include "trpc/server/detail/parked_work.h"
#include "trpc/server/server_filter.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

ServerCall::ServerCall(ConnectionPtr conn, ServerCodec* codec, int64_t recv_ns)
    : ServerContext(recv_ns),
      conn_(std::move(conn)),
      codec_(codec),
      reply_slot_(conn_->frame_slot()) {}

void ServerCall::Run() {
  // Adopts the reference Submit() handed to the thread model with the task.
  ServerContextPtr self(this, kAdoptRef);
  // Still queued when a stop answered it: its handler would only work for a dropped reply.
  if (counted_pending_ && reply_state_.load(std::memory_order_acquire) == kCut) return;
  if (counted_pending_ && !runs_on_loop_) {
    runner_->RunCall(self, *this);  // asynchronous dispatch (fiber): the in-flight list covers it
    return;
  }
  // On the loop thread (merge, inline or after the pass's reads with max_concurrency): the slot
  // lets a stop take over a worker stuck in this handler (the contract is in
  // detail/in_flight.h). A request counted pending is also in the in-flight list, as after a
  // handler's SetResponse(false).
  slot_calls_ = InFlightCalls::OfThisThread(conn_->reactor());
  slot_calls_->slot.store(reinterpret_cast<uintptr_t>(this), std::memory_order_release);
  in_slot_ = true;
  runner_->RunCall(self, *this);
  if (in_slot_) LeaveSlot();
}

void ServerCall::LeaveSlot() {
  in_slot_ = false;
  uintptr_t mine = reinterpret_cast<uintptr_t>(this);
  if (!slot_calls_->slot.compare_exchange_strong(mine, InFlightCalls::kIdle,
                                                 std::memory_order_acq_rel)) {
    slot_calls_->WaitReleased();  // a stop took this worker over meanwhile
  }
}

void ServerCall::LinkInFlight() {
  InFlightCalls* calls = InFlightCalls::OfThisThread(conn_->reactor());
  // Only a merge handler's SetResponse(false) links from inside a handler (in_slot_).
  uintptr_t held = in_slot_ ? calls->Hold() : InFlightCalls::kIdle;
  in_flight_prev_ = nullptr;
  in_flight_next_ = calls->head;
  if (calls->head != nullptr) calls->head->in_flight_prev_ = this;
  calls->head = this;
  in_flight_.store(calls, std::memory_order_relaxed);
  calls->Unhold(held);
}

void ServerCall::UnlinkInFlight() {
  InFlightCalls* calls = in_flight_.load(std::memory_order_relaxed);
  if (calls == nullptr) return;
  if (in_flight_prev_ != nullptr) {
    in_flight_prev_->in_flight_next_ = in_flight_next_;
  } else {
    calls->head = in_flight_next_;
  }
  if (in_flight_next_ != nullptr) in_flight_next_->in_flight_prev_ = in_flight_prev_;
  in_flight_prev_ = nullptr;
  in_flight_next_ = nullptr;
  // Release: a thread that then sees null here may free the context (FreeLastRef).
  in_flight_.store(nullptr, std::memory_order_release);
}

void ServerCall::Free(const ServerCall* p) {
  Reactor* r;
  if (p->in_flight_.load(std::memory_order_acquire) == nullptr ||
      (r = p->conn_->reactor())->InLoopThread()) [[likely]] {
    delete p;  // (a linked one is unlinked by its destructor, on its loop thread)
    return;
  }
  // Only a context dropped unanswered off its loop thread gets here (a reply from another
  // thread keeps it alive in the task that carries the reply to the loop).
  r->Post([p] { delete p; });
}

namespace {
// Queues `out` (if any) in the request's reply slot and ends the request's pending count, on
// the connection's loop thread: in one task, so the reply is queued before reading may resume.
// An empty `out` still fills the slot (ordered protocols: later replies wait for it).
void QueueOnLoop(const ConnectionPtr& conn, uint64_t slot, ChainBuffer&& out, bool end_request) {
  if (out.Blank() && slot == 0 && !end_request) return;
  Reactor* r = conn->reactor();
  if (r->InLoopThread()) {
    conn->SendReply(slot, std::move(out), end_request);
    return;
  }
  r->Post([conn, slot, buf = std::make_shared<ChainBuffer>(std::move(out)), end_request]() mutable {
    if (!buf->Blank()) conn->reactor()->CountForeignReply();
    conn->SendReply(slot, std::move(*buf), end_request);
  });
}
}  // namespace

ServerCall::~ServerCall() {
  // A handler that never replied: its request must still stop counting against the connection
  // and give up its reply slot — unless a stop answered it (and did both). Either way it
  // leaves the concurrency limit.
  if (limiter_ != nullptr) LeaveLimiter(MonotonicNanos());
  if (parked_permit_) ParkedWork::Instance().Release();
  if (replied_ || reply_state_.exchange(kReplied, std::memory_order_acq_rel) == kCut) return;
  InFlightCalls* calls = in_flight_.load(std::memory_order_relaxed);
  if (calls == nullptr) {
    QueueOnLoop(conn_, reply_slot_, ChainBuffer(), counted_pending_);
    return;
  }
  uintptr_t held = calls->Hold();  // on the loop thread (see FreeLastRef), maybe in a handler
  UnlinkInFlight();
  QueueOnLoop(conn_, reply_slot_, ChainBuffer(), counted_pending_);
  calls->Unhold(held);
}

void ServerCall::LeaveLimiter(int64_t now_ns) {
  limiter_->OnDone(limiter_reactor_, now_ns - GetRecvTimestampNs(),
                   start_ns_ > 0 ? now_ns - start_ns_ : 0, now_ns);
  limiter_ = nullptr;
}

void ServerCall::TakeOverReply() {
  if (!counted_pending_ && !replied_) {
    // An inline (merge) handler runs on the loop thread and was not counted: count it now, so
    // reading pauses at max_pending_requests and a graceful close waits for the late reply.
    conn_->BeginRequest();
    SetCountedPending();
  }
}

bool ServerCall::ClaimReply() {
  if (counted_pending_) return reply_state_.exchange(kReplied, std::memory_order_acq_rel) != kCut;
  // Not counted: a merge handler replying inline (or a filter's refusal before the handler), on
  // the loop thread. Inside its handler it holds the slot busy while the reply is queued, so a
  // stop cannot take the worker over meanwhile; a stop that already did answered the call.
  if (!in_slot_) return true;
  uintptr_t mine = reinterpret_cast<uintptr_t>(this);
  if (!slot_calls_->slot.compare_exchange_strong(mine, InFlightCalls::kBusy,
                                                 std::memory_order_acq_rel)) {
    return false;
  }
  slot_busy_ = true;
  return true;
}

void ServerCall::FillResponseHeader(RpcResponse* rsp) const {
  const RpcRequest& req = request();
  rsp->version = req.version;
  rsp->call_type = req.call_type;
  rsp->request_id = req.request_id;
  rsp->message_type = req.message_type;
  rsp->content_type = req.content_type;
  rsp->content_encoding = req.content_encoding;
  rsp->frame_stream_id = req.frame_stream_id;
  rsp->frame_version = req.frame_version;
  rsp->request_protocol = req.protocol.get();
}

bool ServerCall::CutByStop(CutReply* cut) {
  if (reply_state_.exchange(kCut, std::memory_order_acq_rel) != kNotReplied) return false;
  Record(MonotonicNanos(), kServerSystemErr, 0);
  if (!IsOneway() && stream_ == nullptr) {
    RpcResponse rsp;
    FillResponseHeader(&rsp);
    rsp.ret = kServerSystemErr;
    rsp.error_msg = "server stopped before the handler finished";
    if (!codec_->EncodeResponse(&rsp, nullptr, &cut->out)) cut->out.Clear();
  }
  // Copies: once unlinked, the call (and with it maybe the last reference to a connection that
  // has closed) may be freed by its handler's thread.
  cut->conn = conn_;
  cut->slot = reply_slot_;
  cut->counted = counted_pending_;
  UnlinkInFlight();  // the last access
  return true;
}

void ServerCall::FinishOnLoop(ChainBuffer&& out) {
  Reactor* r = conn_->reactor();
  InFlightCalls* calls = in_flight_.load(std::memory_order_relaxed);
  if (!r->InLoopThread()) {
    if (calls == nullptr) {
      QueueOnLoop(conn_, reply_slot_, std::move(out), counted_pending_);
      return;
    }
    // The task holds the context instead of its connection (one reference either way).
    r->Post([self = ServerContextPtr(this), buf = std::make_shared<ChainBuffer>(std::move(out))] {
      ServerCall& call = Of(*self);
      if (!buf->Blank()) call.conn_->reactor()->CountForeignReply();
      call.UnlinkInFlight();
      call.conn_->SendReply(call.reply_slot_, std::move(*buf), call.counted_pending_);
    });
    return;
  }
  if (calls == nullptr) {
    if (!out.Blank() || reply_slot_ != 0 || counted_pending_) {
      conn_->SendReply(reply_slot_, std::move(out), counted_pending_);
    }
  } else {
    // (Merge: maybe inside another call's handler.)
    uintptr_t held = calls->Hold();
    UnlinkInFlight();
    conn_->SendReply(reply_slot_, std::move(out), counted_pending_);
    calls->Unhold(held);
  }
  if (slot_busy_) {
    // Replied: the handler's remaining code is no longer something a stop could answer for.
    slot_busy_ = false;
    in_slot_ = false;
    slot_calls_->slot.store(InFlightCalls::kIdle, std::memory_order_release);
  }
}

bool ServerCall::RunFilters(FilterPoint point) {
  if (filters_ == nullptr || filters_->Empty()) return true;
  std::string rejected_by;
  if (filters_->Run(point, ServerContextPtr(this), &rejected_by)) return true;
  if (GetStatus().OK()) SetStatus(Status(kUnknownErr, "rejected by server filter " + rejected_by));
  return false;
}

void ServerCall::SendReply(const Status& status, const google::protobuf::MessageLite* body) {
  if (replied_) return;
  replied_ = true;
  if (!ClaimReply()) return;  // a stop answered this call already
  // One clock read serves the deadline check and the latency (which therefore ends before the
  // reply is encoded).
  int64_t now = GetDeadlineNs() > 0 || method_counters_ != nullptr ? MonotonicNanos() : 0;
  if (now != 0 && conn_->reactor()->InLoopThread()) conn_->reactor()->NoteTime(now);
  if (limiter_ != nullptr) LeaveLimiter(now != 0 ? now : MonotonicNanos());
  Status late;
  // A downstream call that timed out because this request's own budget ran out (full-link
  // timeout) is this request's timeout: the caller learns it with the server's code.
  bool downstream_timeout = status.GetFrameworkRetCode() == kClientInvokeTimeoutErr ||
                            status.GetFrameworkRetCode() == kClientFullLinkTimeoutErr;
  if ((status.OK() || downstream_timeout) && GetDeadlineNs() > 0 && now > GetDeadlineNs() &&
      !IsOneway()) {
    // The caller has given up by now, or soon will; say so instead of sending a result it
    // will not use.
    late = Status(kServerTimeoutErr, status.OK() ? "deadline passed while the request was handled"
                                                 : "deadline passed: " + status.ErrorMessage());
  }
  const Status* chosen = late.GetFrameworkRetCode() != 0 ? &late : &status;
  if (filters_ != nullptr && !filters_->Empty()) {
    // Filters see (and may replace) the status about to be sent.
    SetStatus(*chosen);
    if (invoked_) RunFilters(FilterPoint::SERVER_POST_RPC_INVOKE);
    if (!IsOneway()) RunFilters(FilterPoint::SERVER_PRE_SEND_MSG);
    chosen = &GetStatus();
  }
  if (IsOneway() || stream_ != nullptr) {
    if (stream_ != nullptr && chosen != &GetStatus()) SetStatus(*chosen);  // (the stream's end)
    Record(now, chosen->GetFrameworkRetCode(), chosen->GetFuncRetCode());
    FinishOnLoop(ChainBuffer());
    return;
  }
  const Status& st = *chosen;
  RpcResponse rsp;
  FillResponseHeader(&rsp);
  rsp.ret = st.GetFrameworkRetCode();
  rsp.func_ret = st.GetFuncRetCode();
  if (!st.OK()) {
    rsp.error_msg = st.ErrorMessage();
    body = nullptr;
    rsp.content_encoding = 0;  // no body, so nothing is encoded (and the request's may be unknown)
  }
  // The request's metadata travels back with the reply; the handler's own entries win.
  RpcRequest& req = mutable_request();
  if (req.echo_trans_info) rsp.trans_info = std::move(req.trans_info);
  for (auto& [k, v] : rsp_trans_info()) rsp.trans_info[k] = std::move(v);
  if (st.OK()) {
    rsp.protocol = std::move(protocol_response());
    rsp.protocol_ref = protocol_rsp_ref_;
    if (response_attachment() != nullptr) [[unlikely]] {
      rsp.attachment = std::move(*response_attachment());
    }
  }
  protocol_rsp_ref_ = nullptr;  // it lives no longer than this call

  ChainBuffer out;
  if (!codec_->EncodeResponse(&rsp, body, &out)) {
    RpcResponse err;
    FillResponseHeader(&err);
    err.ret = kServerEncodeErr;
    err.error_msg = "failed to encode the response";
    err.content_encoding = 0;
    out.Clear();
    Record(now, kServerEncodeErr, 0);
    if (!codec_->EncodeResponse(&err, nullptr, &out)) {
      FinishOnLoop(ChainBuffer());
      return;
    }
  } else {
    Record(now, rsp.ret, rsp.func_ret);
  }
  FinishOnLoop(std::move(out));
}

void ServerCall::SetMethodCounters(MethodCounters* counters) {
  method_counters_ = counters;
  if (counters != nullptr) counters->Start();
}

void ServerCall::Record(int64_t now_ns, int32_t ret, int32_t func_ret) {
  if (method_counters_ != nullptr) {
    method_counters_->Record(now_ns - GetRecvTimestampNs(), ret, func_ret,
                             codec_->WireStatus(ret, func_ret));
  }
}

}  // namespace trpc::detail

namespace trpc {

// ServerContext's accessors that need the framework's part of the call: defined here, beside
// it, so that server_context.cc (and with it every handler-facing unit) does not include this
// detail header. Every context is a ServerCall (the request path makes them so).

const NetAddress& ServerContext::GetRemoteAddr() const {
  return detail::ServerCall::Of(*this).connection()->peer();
}

std::string_view ServerContext::GetProtocolName() const {
  return detail::ServerCall::Of(*this).codec()->Name();
}

const TlsPeer* ServerContext::GetTlsPeer() const {
  return detail::ServerCall::Of(*this).connection()->tls_peer().get();
}

const std::shared_ptr<CancelSignal>& ServerContext::GetCancelSignal() const {
  if (cancel_signal_ == nullptr) {
    // A unary call: its protocol's own (gRPC), else its connection's close, which every call on
    // the connection shares.
    cancel_signal_ = request().cancel_signal != nullptr
                         ? request().cancel_signal
                         : detail::ServerCall::Of(*this).connection()->CloseSignal();
  }
  return cancel_signal_;
}

void ServerContext::SetResponse(bool framework_replies) {
  framework_replies_ = framework_replies;
  if (!framework_replies) detail::ServerCall::Of(*this).TakeOverReply();
}

void ServerContext::SendUnaryResponse(const Status& status,
                                      const google::protobuf::MessageLite& rsp) {
  detail::ServerCall::Of(*this).SendReply(status, &rsp);
}

void ServerContext::SendUnaryResponse(const Status& status) {
  detail::ServerCall::Of(*this).SendReply(status, nullptr);
}

void ServerContext::FreeLastRef(const ServerContext* p) {
  detail::ServerCall::Free(&detail::ServerCall::Of(*p));
}
}  // namespace trpc
