#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/transport/client_connection.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::detail {

/// The client's streams on one connection: the protocol's ClientStreamSession, and the
/// StreamCore each open stream runs as. The connection's stream sink (its stream frames come
/// here) and the streams' link (their output goes out through here). Made at the first stream
/// a proxy opens on the connection, owned by it.
///
/// Thread contract: the connection's loop thread only.
class ClientStreams final : public ClientConnection::StreamSink,
                            public ClientStreamHost,
                            public StreamLink {
 public:
  /// Called once with the server's answer to an open: OK, or why the stream did not open.
  using Opened = std::function<void(const Status&)>;

  /// The streams of `conn`, made (with `codec`'s session) if it has none yet. Null when the
  /// protocol has no streams.
  static ClientStreams* Of(ClientConnection* conn, ClientCodec* codec);

  /// Opens a stream for `head` (its func, metadata, content type and encoding). The stream is
  /// usable once `opened` says OK; without the server's answer by `deadline_ns` (0: none) it is
  /// given up with 101. Null (with `*st`) when it cannot even be asked for. A protocol whose
  /// streams open at once (opens_at_once()) never calls `opened`: the stream is usable now.
  std::shared_ptr<StreamCore> Open(const RpcRequest& head, size_t max_message_bytes,
                                   int64_t deadline_ns, Opened opened, Status* st);

  bool opens_at_once() const { return session_->OpensAtOnce(); }

  // StreamSink
  void OnStreamFrame(ChainBuffer&& frame) override;
  void OnConnectionLost(const std::string& reason) override;
  // ClientStreamHost
  void OnStreamOpened(uint32_t id, const Status& status) override;
  void OnStreamMessage(uint32_t id, ChainBuffer&& msg) override;
  void OnStreamRemoteEnd(uint32_t id, const Status& status, bool reset) override;
  void OnStreamWritable(uint32_t id) override;
  // StreamLink
  bool CanSend(uint32_t id) override { return session_->CanSend(id); }
  bool SendMessage(uint32_t id, ChainBuffer&& msg, std::string* err) override;
  void Consumed(uint32_t id, size_t n) override;
  void Finish(StreamCore* core, const Status& status) override;
  void WatchBacklog(StreamCore* core) override;

  /// Every stream reads with this window (the protocol's default).
  static constexpr uint32_t kWindow = 65535;
  static constexpr uint32_t kMaxStreams = 1000;

 private:
  ClientStreams(ClientConnection* conn, std::unique_ptr<ClientStreamSession> session)
      : conn_(conn), reactor_(conn->connection()->reactor()), session_(std::move(session)) {}
  ~ClientStreams() override;
  void Flush();

  struct Entry {
    std::shared_ptr<StreamCore> core;
    Opened opened;      // until the server's answer
    TimerId timer = 0;  // the answer's deadline
  };
  // Takes `id`'s answer callback (and cancels its deadline): null once answered.
  Opened TakeOpened(Entry& e);
  ClientConnection* conn_;
  Reactor* reactor_;
  std::unique_ptr<ClientStreamSession> session_;
  std::unordered_map<uint32_t, Entry> streams_;
  ChainBuffer out_;
};

}  // namespace trpc::detail
