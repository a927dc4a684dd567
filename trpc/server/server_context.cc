#include "trpc/server/server_context.h"

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/codec.h"
#include "trpc/reactor/reactor.h"
#include "trpc/server/detail/concurrency_limiter.h"
#include "trpc/server/detail/method_counters.h"
#include "trpc/server/detail/service_adapter.h"
#include "trpc/server/server_filter.h"
#include "trpc/transport/connection.h"

namespace trpc {

ServerContext::ServerContext(ConnectionPtr conn, ServerCodec* codec, int64_t recv_ns)
    : conn_(std::move(conn)), codec_(codec), recv_ns_(recv_ns), reply_slot_(conn_->frame_slot()) {}

const NetAddress& ServerContext::GetRemoteAddr() const { return conn_->peer(); }

void ServerContext::Run() {
  // Adopts the reference the adapter handed to the thread model with the task.
  ServerContextPtr self(this, kAdoptRef);
  adapter_->RunSubmitted(self);
}

namespace {
// Queues `out` (if any) in the request's reply slot and ends the request's pending count, on
// the connection's loop thread: in one task, so the reply is queued before reading may resume.
// An empty `out` still fills the slot (ordered protocols: later replies wait for it).
void QueueOnLoop(const ConnectionPtr& conn, uint64_t slot, ChainBuffer&& out, bool end_request) {
  if (out.empty() && slot == 0 && !end_request) return;
  Reactor* r = conn->reactor();
  if (r->InLoopThread()) {
    conn->SendReply(slot, std::move(out), end_request);
    return;
  }
  r->Post([conn, slot, buf = std::make_shared<ChainBuffer>(std::move(out)), end_request]() mutable {
    conn->SendReply(slot, std::move(*buf), end_request);
  });
}
}  // namespace

ServerContext::~ServerContext() {
  // A handler that never replied: its request must still stop counting against the connection
  // and give up its reply slot.
  if (!replied_) QueueOnLoop(conn_, reply_slot_, ChainBuffer(), counted_pending_);
  if (limiter_ != nullptr) LeaveLimiter(MonotonicNanos());
}

void ServerContext::LeaveLimiter(int64_t now_ns) {
  limiter_->OnDone(limiter_reactor_, now_ns - recv_ns_, start_ns_ > 0 ? now_ns - start_ns_ : 0,
                   now_ns);
  limiter_ = nullptr;
}

void ServerContext::SetResponse(bool framework_replies) {
  framework_replies_ = framework_replies;
  if (!framework_replies && !counted_pending_ && !replied_) {
    // An inline (merge) handler runs on the loop thread and was not counted: count it now, so
    // reading pauses at max_pending_requests and a graceful close waits for the late reply.
    conn_->BeginRequest();
    counted_pending_ = true;
  }
}

int64_t ServerContext::GetRemainingTimeoutMs() const {
  if (deadline_ns_ == 0) return 0;
  int64_t left = deadline_ns_ - MonotonicNanos();
  return left <= 0 ? 0 : std::max<int64_t>(1, left / kNanosPerMilli);
}

bool ServerContext::RunFilters(FilterPoint point) {
  if (filters_ == nullptr || filters_->Empty()) return true;
  std::string rejected_by;
  if (filters_->Run(point, ServerContextPtr(this), &rejected_by)) return true;
  if (status_.OK()) status_ = Status(kUnknownErr, "rejected by server filter " + rejected_by);
  return false;
}

void ServerContext::SendReply(const Status& status, const google::protobuf::MessageLite* body) {
  if (replied_) return;
  replied_ = true;
  // One clock read serves the deadline check and the latency (which therefore ends before the
  // reply is encoded).
  int64_t now = deadline_ns_ > 0 || method_counters_ != nullptr ? MonotonicNanos() : 0;
  if (now != 0 && conn_->reactor()->InLoopThread()) conn_->reactor()->NoteTime(now);
  if (limiter_ != nullptr) LeaveLimiter(now != 0 ? now : MonotonicNanos());
  Status late;
  // A downstream call that timed out because this request's own budget ran out (full-link
  // timeout) is this request's timeout: the caller learns it with the server's code.
  bool downstream_timeout = status.GetFrameworkRetCode() == kClientInvokeTimeoutErr ||
                            status.GetFrameworkRetCode() == kClientFullLinkTimeoutErr;
  if ((status.OK() || downstream_timeout) && deadline_ns_ > 0 && now > deadline_ns_ &&
      !IsOneway()) {
    // The caller has given up by now, or soon will; say so instead of sending a result it
    // will not use.
    late = Status(kServerTimeoutErr, status.OK() ? "deadline passed while the request was handled"
                                                 : "deadline passed: " + status.ErrorMessage());
  }
  const Status* chosen = late.GetFrameworkRetCode() != 0 ? &late : &status;
  if (filters_ != nullptr && !filters_->Empty()) {
    // Filters see (and may replace) the status about to be sent.
    status_ = *chosen;
    if (invoked_) RunFilters(FilterPoint::SERVER_POST_RPC_INVOKE);
    if (!IsOneway()) RunFilters(FilterPoint::SERVER_PRE_SEND_MSG);
    chosen = &status_;
  }
  if (IsOneway()) {
    Record(now, chosen->GetFrameworkRetCode(), chosen->GetFuncRetCode());
    QueueOnLoop(conn_, reply_slot_, ChainBuffer(), counted_pending_);
    return;
  }
  const Status& st = *chosen;
  RpcResponse rsp;
  rsp.version = req_.version;
  rsp.call_type = req_.call_type;
  rsp.request_id = req_.request_id;
  rsp.message_type = req_.message_type;
  rsp.content_type = req_.content_type;
  rsp.content_encoding = req_.content_encoding;
  rsp.ret = st.GetFrameworkRetCode();
  rsp.func_ret = st.GetFuncRetCode();
  if (!st.OK()) {
    rsp.error_msg = st.ErrorMessage();
    body = nullptr;
  }
  // The request's metadata travels back with the reply; the handler's own entries win.
  rsp.trans_info = std::move(req_.trans_info);
  for (auto& [k, v] : rsp_trans_info_) rsp.trans_info[k] = std::move(v);
  rsp.request_protocol = req_.protocol.get();
  if (st.OK()) {
    rsp.protocol = std::move(protocol_rsp_);
    rsp.protocol_ref = protocol_rsp_ref_;
  }
  protocol_rsp_ref_ = nullptr;  // it lives no longer than this call

  ChainBuffer out;
  if (!codec_->EncodeResponse(&rsp, body, &out)) {
    RpcResponse err;
    err.request_id = req_.request_id;
    err.call_type = req_.call_type;
    err.ret = kServerEncodeErr;
    err.error_msg = "failed to encode the response";
    err.content_type = req_.content_type;
    err.request_protocol = req_.protocol.get();
    out.Clear();
    Record(now, kServerEncodeErr, 0);
    if (!codec_->EncodeResponse(&err, nullptr, &out)) {
      QueueOnLoop(conn_, reply_slot_, ChainBuffer(), counted_pending_);
      return;
    }
  } else {
    Record(now, rsp.ret, rsp.func_ret);
  }
  QueueOnLoop(conn_, reply_slot_, std::move(out), counted_pending_);
}

void ServerContext::Record(int64_t now_ns, int32_t ret, int32_t func_ret) {
  if (method_counters_ != nullptr) method_counters_->Record(now_ns - recv_ns_, ret, func_ret);
}

}  // namespace trpc
