#pragma once

#include <deque>
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
/// FIFO protocols (FrameCodec::FifoResponses, HTTP/1.1) have no ids on the wire: each response
/// answers the oldest request still outstanding, and the request id passed to Call() only names
/// the call here. A call that times out stays outstanding until its response comes (which is
/// then dropped), since the responses behind it cannot overtake it; if no live call is left
/// behind it, the connection is closed instead of waiting. A response that announces the end
/// of the connection (FrameCodecState::closing, HTTP's "Connection: close") closes it after the
/// responses of its read, failing only the calls still outstanding (141). One-way requests get
/// a response too, which is dropped.
///
/// Ownership: shared_ptr, held by its owner (a proxy); dropping the last reference closes the
/// connection and fails the calls still pending with 141. Thread contract: loop-thread only.
///
/// Limits: a call is refused with 124 (overload) while more than max_pending_write_bytes of
/// requests wait to be written, or while the connection's reading is paused by its buffer
/// budget (ConnectionOptions::budget: the client's max_buffered_bytes); a connect that has not
/// completed after `connect_timeout_ms` fails with 111.
class ClientConnection : public Connection::Handler,
                         public std::enable_shared_from_this<ClientConnection> {
 public:
  using Done = std::function<void(Status status, ChainBuffer&& frame)>;

  /// Where the connection's stream frames go (FrameCodec::IsStreamFrame): the client's streams
  /// on this connection, which the layer above keeps (the transport names no protocol). Loop
  /// thread.
  class StreamSink {
   public:
    virtual ~StreamSink() = default;
    virtual void OnStreamFrame(ChainBuffer&& frame) = 0;
    /// The connection closed: every stream on it has ended.
    virtual void OnConnectionLost(const std::string& reason) = 0;
  };

  ClientConnection(Reactor* reactor, const NetAddress& target, FrameCodec* codec,
                   const ConnectionOptions& options, int64_t connect_timeout_ms = 0);
  ~ClientConnection() override;

  /// Starts a non-blocking connect. False (with `*err`) if the socket could not even be made.
  bool Connect(std::string* err);
  /// A request id not used by any call in flight on this connection.
  uint32_t NextRequestId() { return ++next_id_ == 0 ? ++next_id_ : next_id_; }
  /// Sends an encoded request carrying `request_id`; `done` gets the matching response frame.
  void Call(uint32_t request_id, ChainBuffer&& request, int64_t deadline_ns, Done done);
  /// Gives up on a call still pending (a hedged call another attempt won): its `done` gets 161
  /// at once and a late response is dropped; a protocol that can tell the server (gRPC's
  /// RST_STREAM) does. FIFO protocols cannot cancel one response among the ordered ones: false,
  /// and the call goes on. False too when the call is no longer pending.
  bool Cancel(uint32_t request_id) {
    return Cancel(request_id, Status(kClientCanceledErr, "call cancelled"));
  }
  /// The same, ending the call with `why` instead.
  bool Cancel(uint32_t request_id, Status why);
  /// Sends an encoded one-way request (no response expected; FIFO protocols: its response is
  /// dropped).
  void SendOneway(ChainBuffer&& request);
  /// The stream sink (null until the first stream on this connection); owned by the connection.
  StreamSink* stream_sink() const { return stream_sink_.get(); }
  void set_stream_sink(std::unique_ptr<StreamSink> sink) { stream_sink_ = std::move(sink); }
  /// Queues the streams' own frames (in order with the calls' requests).
  void SendStreamBytes(ChainBuffer&& bytes) {
    if (usable()) conn_->SendWire(std::move(bytes), /*now=*/true);
  }
  /// The connection underneath (null before Connect), for a stream's loop tasks.
  const ConnectionPtr& connection() const { return conn_; }
  /// Closes the connection and fails every pending call with 141.
  void Close(const std::string& reason);
  /// Closes once the queued requests are written (for one-way calls on short connections).
  void CloseAfterFlush() {
    if (conn_) conn_->CloseAfterFlush("short connection done");
  }

  /// Open, and not closed or announced to close by the peer: new calls may go out on it.
  bool usable() const {
    if (!conn_ || conn_->closed()) return false;
    FrameCodecState* st = conn_->codec_state();
    if (st == nullptr) return true;
    const CallSession* session = st->session();
    return !(st->closing || conn_->peer_closed() || (session != nullptr && session->no_new_calls));
  }
  /// Runs once, at the end of the close (after the pending calls have failed).
  void set_close_callback(std::function<void(ClientConnection*)> cb) {
    close_callback_ = std::move(cb);
  }
  /// FIFO protocols: runs after a response has freed an outstanding slot (after its call's
  /// callback), so that an owner can send a call that was waiting for one.
  void set_slot_free_callback(std::function<void(ClientConnection*)> cb) {
    slot_free_callback_ = std::move(cb);
  }
  /// Calls whose callback has not run yet.
  size_t inflight() const { return pending_.size(); }
  /// Requests on the wire whose response has not come: for FIFO protocols also timed-out calls
  /// and one-way requests (their responses still occupy the connection), else inflight().
  size_t outstanding() const { return fifo_ ? order_.size() : pending_.size(); }
  bool fifo() const { return fifo_; }
  const NetAddress& target() const { return target_; }

  // Connection::Handler
  void OnFrame(Connection* conn, ChainBuffer&& frame) override;
  void OnBatchEnd(Connection* conn) override;
  void OnConnected(Connection* conn) override;
  void OnClose(Connection* conn, const std::string& reason) override;

 private:
  struct Pending {
    Done done;
    TimerId timer = 0;
  };
  void OnTimeout(uint32_t request_id);
  // Ends a pending call with `st` (a timeout, a cancel): its timer, its queued bytes (a protocol
  // that can tell the server does) and its entry go. False when it is not pending.
  bool GiveUp(uint32_t request_id, Status st);
  void OnFifoFrame(Connection* conn, ChainBuffer&& frame);
  // Marks `request` sent, for FIFO protocols (`request_id` 0: a one-way request).
  void NoteSent(uint32_t request_id, const ChainBuffer& request);

  Reactor* reactor_;
  NetAddress target_;
  FrameCodec* codec_;
  ConnectionOptions options_;
  ConnectionPtr conn_;
  int64_t connect_timeout_ms_;
  TimerId connect_timer_ = 0;
  std::function<void(ClientConnection*)> close_callback_;
  std::function<void(ClientConnection*)> slot_free_callback_;
  const bool fifo_;
  bool connected_ = false;
  uint32_t next_id_ = 0;
  std::unordered_map<uint32_t, Pending> pending_;
  // FIFO protocols: the request ids of the requests on the wire, oldest first (0 for one-way
  // requests); an id no longer in pending_ is a timed-out call whose response is to be dropped.
  std::deque<uint32_t> order_;
  std::unique_ptr<StreamSink> stream_sink_;
};

using ClientConnectionPtr = std::shared_ptr<ClientConnection>;

}  // namespace trpc
