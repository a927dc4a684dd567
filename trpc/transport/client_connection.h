#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "trpc/base/status.h"
#include "trpc/transport/connection.h"

namespace trpc {

/// A client connection that multiplexes many in-flight calls, matched to responses by request id
/// (read from each response frame through FrameCodec::PeekResponseId). Each call has its own
/// timeout timer. Every call's callback runs exactly once, on the loop thread: with the response
/// frame, or with ret 101 (timeout), 111 (connect failed) or 141 (connection lost).
///
/// Ownership: shared_ptr, held by its owner (a proxy); dropping the last reference closes the
/// connection and fails the calls still pending with 141. Thread contract: loop-thread only.
///
/// Limits: a call is refused with 124 (overload) while more than max_pending_write_bytes of
/// requests wait to be written; a connect that has not completed after `connect_timeout_ms`
/// fails with 111.
class ClientConnection : public Connection::Handler,
                         public std::enable_shared_from_this<ClientConnection> {
 public:
  using Done = std::function<void(Status status, ChainBuffer&& frame)>;

  ClientConnection(Reactor* reactor, const NetAddress& target, FrameCodec* codec,
                   const ConnectionOptions& options, int64_t connect_timeout_ms = 0);
  ~ClientConnection() override;

  /// Starts a non-blocking connect. False (with `*err`) if the socket could not even be made.
  bool Connect(std::string* err);
  /// A request id not used by any call in flight on this connection.
  uint32_t NextRequestId() { return ++next_id_ == 0 ? ++next_id_ : next_id_; }
  /// Sends an encoded request carrying `request_id`; `done` gets the matching response frame.
  void Call(uint32_t request_id, ChainBuffer&& request, int64_t deadline_ns, Done done);
  /// Sends an encoded one-way request (no response expected).
  void SendOneway(ChainBuffer&& request);
  /// Closes the connection and fails every pending call with 141.
  void Close(const std::string& reason);
  /// Closes once the queued requests are written (for one-way calls on short connections).
  void CloseAfterFlush() {
    if (conn_) conn_->CloseAfterFlush("short connection done");
  }

  bool usable() const { return conn_ && !conn_->closed(); }
  /// Runs once, at the end of the close (after the pending calls have failed).
  void set_close_callback(std::function<void(ClientConnection*)> cb) {
    close_callback_ = std::move(cb);
  }
  size_t inflight() const { return pending_.size(); }
  const NetAddress& target() const { return target_; }

  // Connection::Handler
  void OnFrame(Connection* conn, ChainBuffer&& frame) override;
  void OnConnected(Connection* conn) override;
  void OnClose(Connection* conn, const std::string& reason) override;

 private:
  struct Pending {
    Done done;
    TimerId timer = 0;
  };
  void OnTimeout(uint32_t request_id);

  Reactor* reactor_;
  NetAddress target_;
  FrameCodec* codec_;
  ConnectionOptions options_;
  ConnectionPtr conn_;
  int64_t connect_timeout_ms_;
  TimerId connect_timer_ = 0;
  std::function<void(ClientConnection*)> close_callback_;
  bool connected_ = false;
  uint32_t next_id_ = 0;
  std::unordered_map<uint32_t, Pending> pending_;
};

using ClientConnectionPtr = std::shared_ptr<ClientConnection>;

}  // namespace trpc
