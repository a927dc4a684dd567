#include "trpc/client/detail/client_streams.h"

#include <utility>

#include "trpc/base/logging.h"

namespace trpc::detail {

ClientStreams* ClientStreams::Of(ClientConnection* conn, ClientCodec* codec) {
  if (auto* sink = conn->stream_sink(); sink != nullptr) return static_cast<ClientStreams*>(sink);
  std::unique_ptr<ClientStreamSession> session = codec->NewClientStreamSession(
      kMaxStreams, conn->connection() != nullptr ? conn->connection()->codec_state() : nullptr);
  if (session == nullptr) return nullptr;
  auto* streams = new ClientStreams(conn, std::move(session));
  conn->set_stream_sink(std::unique_ptr<ClientConnection::StreamSink>(streams));
  return streams;
}

ClientStreams::~ClientStreams() {
  // (The connection's close has normally ended every stream already: OnConnectionLost.)
  Status gone(kStreamClientNetworkErr, "the connection was dropped");
  for (auto& [id, e] : streams_) {
    if (e.timer != 0) reactor_->CancelTimer(e.timer);
    e.core->Detach(gone);  // the cores must not call this object again
    if (e.opened) e.opened(gone);
  }
}

ClientStreams::Opened ClientStreams::TakeOpened(Entry& e) {
  if (e.timer != 0) reactor_->CancelTimer(e.timer);
  e.timer = 0;
  return std::move(e.opened);
}

std::shared_ptr<StreamCore> ClientStreams::Open(const RpcRequest& head, size_t max_message_bytes,
                                                int64_t deadline_ns, Opened opened, Status* st) {
  if (!conn_->usable() || conn_->connection() == nullptr) {
    *st = Status(kClientNetworkErr, "the connection is closing");
    return nullptr;
  }
  uint32_t id = 0;
  std::string err;
  if (!session_->Open(head, kWindow, &id, &out_, &err)) {
    *st = Status(kClientOverloadErr, err);
    return nullptr;
  }
  auto core = std::make_shared<StreamCore>(conn_->connection(), id, head.content_type,
                                           session_->CoreEncoding(head.content_encoding),
                                           max_message_bytes, kWindow, kClientStreamCodes);
  Entry& e = streams_[id];
  e.core = core;
  if (session_->OpensAtOnce()) {
    core->Attach(this, session_->FlowControlled(id), !session_->CountsUnreadBytes());
    Flush();
    return core;
  }
  e.opened = std::move(opened);
  if (deadline_ns > 0) {
    e.timer = reactor_->AddTimer(deadline_ns, [this, id] {
      auto it = streams_.find(id);
      if (it == streams_.end()) return;
      it->second.timer = 0;
      Opened late = std::move(it->second.opened);
      std::shared_ptr<StreamCore> gone = std::move(it->second.core);
      streams_.erase(it);
      Status timeout(kClientInvokeTimeoutErr,
                     "the server did not answer the stream's open in time");
      session_->Finish(id, Status(kClientCanceledErr, "timed out"), &out_);
      Flush();
      gone->Detach(timeout);
      if (late) late(timeout);
    });
  }
  Flush();
  return core;
}

void ClientStreams::Flush() {
  if (!out_.Blank()) conn_->SendStreamBytes(std::move(out_));
  out_.Clear();
}

void ClientStreams::OnStreamFrame(ChainBuffer&& frame) {
  std::string err;
  const bool ok = session_->OnFrame(std::move(frame), this, &out_, &err);
  Flush();
  if (!ok) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "client stream: bad frame from {}: {}",
                      conn_->target().ToString(), err);
    conn_->Close("protocol error: " + err);
  }
}

void ClientStreams::OnConnectionLost(const std::string& reason) {
  auto streams = std::move(streams_);
  streams_.clear();
  Status gone(kStreamClientNetworkErr, "the connection was lost: " + reason);
  for (auto& [id, e] : streams) {
    Opened opened = TakeOpened(e);
    e.core->Detach(gone);
    if (opened) opened(gone);
  }
}

void ClientStreams::OnStreamOpened(uint32_t id, const Status& status) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Opened opened = TakeOpened(it->second);
  std::shared_ptr<StreamCore> core = it->second.core;
  if (status.OK()) {
    core->Attach(this, session_->FlowControlled(id), !session_->CountsUnreadBytes());
  } else {
    streams_.erase(it);
    core->Detach(status);
  }
  if (opened) opened(status);
}

void ClientStreams::OnStreamMessage(uint32_t id, ChainBuffer&& msg) {
  auto it = streams_.find(id);
  if (it != streams_.end()) {
    std::shared_ptr<StreamCore> core = it->second.core;  // what it runs may erase the entry
    core->OnMessage(std::move(msg));
    return;
  }
  session_->Consumed(id, msg.size(), &out_);  // (a stream we gave up: keep the window open)
}

void ClientStreams::OnStreamRemoteEnd(uint32_t id, const Status& status, bool reset) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  std::shared_ptr<StreamCore> core = std::move(it->second.core);
  Opened opened = TakeOpened(it->second);
  streams_.erase(it);
  if (reset) {
    if (opened) opened(status);
    core->Detach(status);
    return;
  }
  if (opened) opened(kSuccStatus);  // (a close before the answer: nothing came of it)
  // The server has finished: what it sent is read to the end; our writes are over. If our
  // side is still open, it is closed for the session's sake.
  session_->Finish(id, kSuccStatus, &out_);
  core->OnPeerFinished(status);
}

void ClientStreams::OnStreamWritable(uint32_t id) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  std::shared_ptr<StreamCore> core = it->second.core;  // what it runs may erase the entry
  core->OnWritable();
}

bool ClientStreams::SendMessage(uint32_t id, ChainBuffer&& msg, std::string* err) {
  const bool ok = session_->SendMessage(id, std::move(msg), &out_, err);
  Flush();
  return ok;
}

void ClientStreams::Consumed(uint32_t id, size_t n) {
  session_->Consumed(id, n, &out_);
  Flush();
}

void ClientStreams::Finish(StreamCore* core, const Status& status) {
  const uint32_t id = core->id();
  session_->Finish(id, status, &out_);
  Flush();
  if (status.OK()) return;  // a half-close: the server's messages still come
  auto it = streams_.find(id);
  if (it == streams_.end() || it->second.core.get() != core) return;
  std::shared_ptr<StreamCore> keep = std::move(it->second.core);
  streams_.erase(it);
  keep->Detach(status);  // cancelled
}

void ClientStreams::WatchBacklog(StreamCore* core) {
  // The client always announces a window; CanSend() answers from the session alone, so a
  // message parks only for want of window, and the server's FEEDBACK releases it.
  (void)core;
}

}  // namespace trpc::detail
