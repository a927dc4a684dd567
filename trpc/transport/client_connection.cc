#include "trpc/transport/client_connection.h"

#include <string.h>

#include "trpc/base/logging.h"
#include "trpc/transport/socket.h"

namespace trpc {

ClientConnection::ClientConnection(Reactor* reactor, const NetAddress& target, FrameCodec* codec,
                                   const ConnectionOptions& options)
    : reactor_(reactor), target_(target), codec_(codec), options_(options) {}

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
  auto [it, fresh] = pending_.try_emplace(request_id);
  if (!fresh) {
    done(Status(kClientEncodeErr, "request id already in flight"), ChainBuffer());
    return;
  }
  Pending& p = it->second;
  p.done = std::move(done);
  std::weak_ptr<ClientConnection> weak = weak_from_this();
  p.timer = reactor_->AddTimer(deadline_ns, [weak, request_id] {
    if (auto self = weak.lock()) self->OnTimeout(request_id);
  });
  conn_->Send(std::move(request));
}

void ClientConnection::SendOneway(ChainBuffer&& request) {
  reactor_->AssertInLoopThread();
  if (usable()) conn_->Send(std::move(request));
}

void ClientConnection::OnTimeout(uint32_t request_id) {
  auto it = pending_.find(request_id);
  if (it == pending_.end()) return;
  Done done = std::move(it->second.done);
  pending_.erase(it);
  done(Status(kClientInvokeTimeoutErr, "request timed out"), ChainBuffer());
}

void ClientConnection::OnFrame(Connection* conn, ChainBuffer&& frame) {
  auto self = weak_from_this().lock();  // a callback may drop the owner's reference
  uint32_t id = 0;
  if (!codec_->PeekResponseId(frame, &id)) {
    conn->Close("malformed response frame");
    return;
  }
  auto it = pending_.find(id);
  if (it == pending_.end()) return;  // a late reply to a call that already timed out
  Done done = std::move(it->second.done);
  reactor_->CancelTimer(it->second.timer);
  pending_.erase(it);
  done(Status(), std::move(frame));
}

void ClientConnection::OnConnected(Connection*) { connected_ = true; }

void ClientConnection::OnClose(Connection*, const std::string& reason) {
  auto self = weak_from_this().lock();  // null while the destructor runs
  int32_t code = connected_ ? kClientNetworkErr : kClientConnectErr;
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    reactor_->CancelTimer(p.timer);
    p.done(Status(code, reason), ChainBuffer());
  }
}

void ClientConnection::Close(const std::string& reason) {
  if (conn_) conn_->Close(reason);
}

}  // namespace trpc
