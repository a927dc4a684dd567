#include "trpc/transport/client_connection.h"

#include <string.h>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/transport/socket.h"

namespace trpc {

ClientConnection::ClientConnection(Reactor* reactor, const NetAddress& target, FrameCodec* codec,
                                   const ConnectionOptions& options, int64_t connect_timeout_ms)
    : reactor_(reactor),
      target_(target),
      codec_(codec),
      options_(options),
      connect_timeout_ms_(connect_timeout_ms),
      fifo_(codec->FifoResponses()) {
  // Replies are what frees a client's memory: never stop reading them (see Call()).
  options_.pause_reading_when_backlogged = false;
}

ClientConnection::~ClientConnection() {
  if (conn_ && !conn_->closed()) conn_->Close("client connection destroyed");
}

bool ClientConnection::Connect(std::string* err) {
  reactor_->AssertInLoopThread();
  int fd = socket_ops::Connect(target_);
  if (fd < 0) {
    *err = fmt::format("connect {}: {}", target_.ToString(), strerror(-fd));
    return false;
  }
  conn_ = std::make_shared<Connection>(reactor_, fd, target_, codec_, this, options_,
                                       /*connecting=*/true);
  conn_->Start();
  if (connect_timeout_ms_ > 0 && !conn_->closed()) {
    // A backend that drops SYNs would otherwise keep this slot "connecting" for minutes.
    connect_timer_ =
        reactor_->AddTimer(MonotonicNanos() + connect_timeout_ms_ * kNanosPerMilli, [this] {
          connect_timer_ = 0;
          if (conn_ && conn_->connecting()) {
            conn_->Close(fmt::format("connect to {} timed out after {} ms", target_.ToString(),
                                     connect_timeout_ms_));
          }
        });
  }
  return true;
}

void ClientConnection::Call(uint32_t request_id, ChainBuffer&& request, int64_t deadline_ns,
                            Done done) {
  reactor_->AssertInLoopThread();
  if (!usable()) {
    done(Status(kClientNetworkErr, "connection to " + target_.ToString() + " is closed"),
         ChainBuffer());
    return;
  }
  if (conn_->budget_paused()) [[unlikely]] {
    // Over its share of the client's bound, reading is paused: a call would only wait.
    done(Status(kClientOverloadErr,
                fmt::format("the client's connections hold more than client.max_buffered_bytes "
                            "({} bytes); this one to {} holds {}",
                            options_.budget->budget().limit(), target_.ToString(),
                            conn_->budget_bytes())),
         ChainBuffer());
    return;
  }
  if (conn_->pending_write_bytes() > options_.max_pending_write_bytes) {
    // The peer is not taking our requests: refuse rather than queue without bound.
    done(Status(kClientOverloadErr, fmt::format("{} request bytes already wait for {}",
                                                conn_->pending_write_bytes(), target_.ToString())),
         ChainBuffer());
    return;
  }
  auto [it, fresh] = pending_.try_emplace(request_id);
  if (!fresh) {
    done(Status(kClientEncodeErr, "request id already in flight"), ChainBuffer());
    return;
  }
  Pending& p = it->second;
  p.done = std::move(done);
  // `this` is safe: OnClose cancels every call timer, and the destructor always closes. (A
  // two-word capture also fits std::function's inline buffer: no allocation per call.)
  p.timer = reactor_->AddTimer(deadline_ns, [this, request_id] { OnTimeout(request_id); });
  if (fifo_) NoteSent(request_id, request);
  conn_->Send(std::move(request));
}

void ClientConnection::SendOneway(ChainBuffer&& request) {
  reactor_->AssertInLoopThread();
  if (!usable()) return;
  if (fifo_) NoteSent(0, request);
  conn_->Send(std::move(request));
}

void ClientConnection::NoteSent(uint32_t request_id, const ChainBuffer& request) {
  codec_->OnRequestSent(conn_->codec_state(), request);
  order_.push_back(request_id);
}

bool ClientConnection::GiveUp(uint32_t request_id, Status st) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return false;
  Done done = std::move(it->second.done);
  reactor_->CancelTimer(it->second.timer);  // (a no-op when the timer is what fired)
  pending_.erase(it);
  if (conn_ && !conn_->closed()) conn_->CancelOutgoing(request_id);
  done(std::move(st), ChainBuffer());
  return true;
}

void ClientConnection::OnTimeout(uint32_t request_id) {
  auto self = weak_from_this().lock();  // the callback may close and drop the last reference
  if (!GiveUp(request_id, Status(kClientInvokeTimeoutErr, "request timed out"))) return;
  // FIFO: the late response would hold up every later call on this connection. With no live
  // call behind it, closing costs nothing and gives the owner a fresh connection.
  if (fifo_ && pending_.empty() && !order_.empty() && conn_ && !conn_->closed()) {
    conn_->Close("a call timed out and its response would block the connection");
  }
}

bool ClientConnection::Cancel(uint32_t request_id, Status why) {
  if (fifo_) return false;
  auto self = weak_from_this().lock();  // the callback may close and drop the last reference
  return GiveUp(request_id, std::move(why));
}

void ClientConnection::OnFrame(Connection* conn, ChainBuffer&& frame) {
  auto self = weak_from_this().lock();  // a callback may drop the owner's reference
  if (fifo_) {
    OnFifoFrame(conn, std::move(frame));
    return;
  }
  if (stream_sink_ != nullptr && codec_->IsStreamFrame(frame)) [[unlikely]] {
    stream_sink_->OnStreamFrame(std::move(frame));
    return;
  }
  uint32_t id = 0;
  if (!codec_->PeekResponseId(frame, &id)) {
    conn->Close("malformed response frame", CloseCause::kProtocolError);
    return;
  }
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // a late reply to a call that already timed out
  Done done = std::move(it->second.done);
  reactor_->CancelTimer(it->second.timer);
  pending_.erase(it);
  done(Status(), std::move(frame));
}

void ClientConnection::OnFifoFrame(Connection* conn, ChainBuffer&& frame) {
  if (order_.empty()) {
    conn->Close("a response to no request", CloseCause::kProtocolError);
    return;
  }
  const uint32_t id = order_.front();
  order_.pop_front();
  auto it = id == 0 ? pending_.end() : pending_.find(id);
  if (it != pending_.end()) {
    Done done = std::move(it->second.done);
    reactor_->CancelTimer(it->second.timer);
    pending_.erase(it);
    done(Status(), std::move(frame));
  }  // else: a one-way request's, or a timed-out call's: dropped
  if (slot_free_callback_ && usable()) slot_free_callback_(this);
}

void ClientConnection::OnBatchEnd(Connection* conn) {
  // The peer announced the close with a response of this read (HTTP's "Connection: close"):
  // what is still outstanding will not be answered.
  if (fifo_ && !conn->closed() && conn->codec_state() != nullptr && conn->codec_state()->closing) {
    conn->Close("the server closed the connection after a response");
  }
}

void ClientConnection::OnConnected(Connection*) {
  connected_ = true;
  if (connect_timer_ != 0) {
    reactor_->CancelTimer(connect_timer_);
    connect_timer_ = 0;
  }
}

void ClientConnection::OnClose(Connection*, const std::string& reason) {
  auto self = weak_from_this().lock();  // null while the destructor runs
  int32_t code = connected_ ? kClientNetworkErr : kClientConnectErr;
  if (connect_timer_ != 0) {
    reactor_->CancelTimer(connect_timer_);
    connect_timer_ = 0;
  }
  auto pending = std::move(pending_);
  pending_.clear();
  order_.clear();
  for (auto& [id, p] : pending) {
    reactor_->CancelTimer(p.timer);
    p.done(Status(code, reason), ChainBuffer());
  }
  if (stream_sink_ != nullptr) stream_sink_->OnConnectionLost(reason);
  if (close_callback_) close_callback_(this);
}

void ClientConnection::Close(const std::string& reason) {
  if (conn_) conn_->Close(reason);
}

}  // namespace trpc
