#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/transport/tls_context.h"

namespace trpc {

enum class SplitResult {
  kOk,     // zero or more frames were cut; the rest waits for more bytes
  kError,  // the bytes can never form a valid frame: close the connection
};

class CallSession;

/// Per-connection state of a protocol, made by FrameCodec::NewConnectionState() and owned by the
/// connection, used on its loop thread only. The transport calls it through this narrow
/// interface; each protocol keeps its own state in its own class (HTTP/1.1: its parser's
/// progress and its head read timeout; HTTP/2: its session, reached through session()).
class FrameCodecState {
 public:
  virtual ~FrameCodecState() = default;

  /// Bytes the protocol must send at once, outside any reply: an interim answer to the request
  /// being read (HTTP's "100 Continue"), or, with kError, the error answer sent before the
  /// close (HTTP's 400), or a session's own frames (HTTP/2's SETTINGS ACK, WINDOW_UPDATE).
  /// Set by the codec's split, taken (emptied) by the connection.
  ChainBuffer immediate;
  /// After kOk: the peer asked to close once the frames cut so far are answered (HTTP's
  /// "Connection: close"); later input is ignored.
  bool closing = false;

  /// The peer has closed its side (EOF); called before the split of the last input: a frame
  /// that ends with the connection (an HTTP/1.1 response without a length) completes then, and
  /// one cut short is an error.
  virtual void OnInputEnded() {}
  /// MonotonicNanos() by which the partly read frame must be complete (HTTP's header read
  /// timeout against slowloris); 0 = no deadline. Read after each split.
  virtual int64_t ReadDeadline() const { return 0; }
  /// The read deadline passed: fill `immediate` with the protocol's answer (HTTP's 408), if any.
  virtual void OnReadTimeout() {}
  /// The caller is gone: the connection has closed (its fd is gone; the state lives on while
  /// calls hold the connection), or the peer's FIN came where that ends the calls
  /// (FrameCodec::PeerMayHalfClose). A protocol with per-call cancellation fires it for the calls
  /// still unanswered. May come twice (the FIN, then the close).
  virtual void OnConnectionClosed() {}

  /// The per-connection session of a protocol that multiplexes calls as streams (HTTP/2), or
  /// null. Constant for the state's life.
  virtual CallSession* session() { return nullptr; }
};

/// A protocol whose bytes on the wire are made by a per-connection session (HTTP/2: HPACK
/// state, stream ids and flow control belong to the connection, so a message can only be
/// encoded on the connection's thread, in the order it is sent). The connection hands every
/// message its owner queues (a server's reply, a client's request, as the codec's Encode* made
/// them: bytes and their MessageMeta) to EncodeOutput() instead of writing it as it is, and
/// tells the session about each call it gives up and about its shutdown. Bytes the session
/// releases later (data that flow control held back until the peer's WINDOW_UPDATE) come out
/// through FrameCodecState::immediate after a split.
///
/// Calls are named by their request id here; streams (several messages each way) extend this
/// interface per stream. Thread contract: the connection's loop thread only.
class CallSession {
 public:
  virtual ~CallSession() = default;

  /// Turns one queued message into the bytes to write, appended to `out` (possibly none yet).
  virtual void EncodeOutput(ChainBuffer&& message, ChainBuffer* out) = 0;
  /// Client side: the call `request_id` was given up (it timed out, or was cancelled); append
  /// what tells the peer to stop working on it (HTTP/2's RST_STREAM) to `out`.
  virtual void CancelCall(uint32_t request_id, ChainBuffer* out) = 0;
  /// The connection is shutting down gracefully (a server's stop): append what announces it to
  /// the peer (HTTP/2's GOAWAY, so a client sends no new calls and retries elsewhere) to `out`.
  virtual void OnShutdown(ChainBuffer* out) = 0;

  /// Client side: the peer takes no new calls on this connection, but answers those in flight
  /// (HTTP/2's GOAWAY). The owner sends new calls elsewhere.
  bool no_new_calls = false;
  /// Bytes of the peer's messages, or of ours, that the session itself keeps (HTTP/2: requests
  /// whose DATA has not all come, replies waiting for the peer's flow-control window). The
  /// connection counts them with its own buffers against the process's buffer bound. Kept up
  /// to date by the session, read by the connection after each event.
  size_t held_bytes = 0;
  /// What the session may hold (held_bytes) before it refuses new work it would have to keep
  /// (HTTP/2: new streams, refused with REFUSED_STREAM): 0 while the process's buffer bound is
  /// reached (a session that holds nothing still admits one unit), SIZE_MAX otherwise. Set by
  /// the connection before each split.
  size_t held_allowance = SIZE_MAX;
};

/// What the transport needs from a protocol: split frames off a byte stream, and (client side)
/// tell which call a response frame answers. Transport defines this seam; codecs implement it,
/// so transport never names a protocol. Implementations keep no mutable state: one instance
/// serves every connection of a service, on many threads at once.
class FrameCodec {
 public:
  virtual ~FrameCodec() = default;

  /// Cuts every complete frame at the front of `in` into `out` (appending). A frame whose
  /// declared size exceeds `max_frame_size` is an error, decided from its fixed header alone,
  /// before its payload is buffered. On kError, `*err` says what was wrong.
  virtual SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                            std::string* err) = 0;

  /// Protocols with per-connection split state return a fresh one; the default (null) means
  /// Split() needs none.
  virtual std::unique_ptr<FrameCodecState> NewConnectionState() { return nullptr; }

  /// Split() with the connection's state (null when NewConnectionState() gave none). The
  /// transport always calls this one; stateless protocols need not override it.
  virtual SplitResult SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out,
                                     size_t max_frame_size, std::string* err,
                                     FrameCodecState* state) {
    (void)state;
    return Split(in, out, max_frame_size, err);
  }

  /// Protocols with streams beside unary calls on one connection (trpc): true when `frame`, as
  /// Split() cut it, belongs to a stream. Such frames go to the connection's stream session,
  /// not to the calls. Asked of every frame, so it is a byte test, not a virtual call: a
  /// protocol marks its stream frames by one byte of the (whole, checked) fixed header
  /// (SetStreamFrameMark).
  bool IsStreamFrame(const ChainBuffer& frame) const {
    if (stream_mark_offset_ < 0) {
      return stream_mark_offset_ == kStreamMarkInMeta && frame.meta() != nullptr &&
             frame.meta()->stream_event;
    }
    std::string_view head = frame.FirstSpan();
    if (static_cast<size_t>(stream_mark_offset_) < head.size()) [[likely]] {
      return static_cast<uint8_t>(head[stream_mark_offset_]) == stream_mark_value_;
    }
    return IsStreamFrameSlow(frame);
  }

  /// Protocols without request ids (HTTP/1.1) must answer in request order even when handlers
  /// finish out of order (the fiber model); the server then sequences their replies.
  virtual bool OrderedReplies() const { return false; }
  /// Whether a peer may half-close (send FIN) and still wait for its replies, as an HTTP/1.1
  /// client may. Where it may not (trpc, HTTP/2), the FIN means the caller is gone: the
  /// connection's cancel signals fire then (Connection::CloseSignal), not only at the close.
  virtual bool PeerMayHalfClose() const { return false; }
  /// Over TLS: the protocol's ALPN ids and whether they are required (gRPC: "h2", required;
  /// HTTP/1.1: "http/1.1"). The default, none, suits protocols without an id (trpc: tRPC-Go
  /// and tRPC-Cpp send no ALPN).
  virtual TlsAlpn Alpn() const { return {}; }

  /// Client side, for protocols that multiplex calls on a connection: reads the request id a
  /// response frame answers. Returns false if the frame carries none or is malformed.
  virtual bool PeekResponseId(const ChainBuffer& frame, uint32_t* request_id) {
    (void)frame;
    (void)request_id;
    return false;
  }

  /// Client side: responses carry no request id and answer the requests of a connection in the
  /// order they were sent (HTTP/1.1). The client connection then matches each response to its
  /// oldest outstanding request instead of calling PeekResponseId.
  virtual bool FifoResponses() const { return false; }

  /// Client side, FIFO protocols: each request, in the order it is queued on the connection,
  /// before any response to it can be split, so that the split knows how that response is
  /// framed (HTTP: the answer to HEAD has no body). `state` is the connection's (null when
  /// NewConnectionState() gave none). Loop thread of the connection.
  virtual void OnRequestSent(FrameCodecState* state, const ChainBuffer& request) {
    (void)state;
    (void)request;
  }

 protected:
  /// Stream frames are those whose byte `offset` is `value` (see IsStreamFrame).
  void SetStreamFrameMark(int offset, uint8_t value) {
    stream_mark_offset_ = offset;
    stream_mark_value_ = value;
  }
  /// Stream frames are those whose MessageMeta says so (MessageMeta::stream_event): for a
  /// protocol whose split hands up typed messages rather than wire bytes (gRPC).
  void SetStreamFramesMarkedInMeta() { stream_mark_offset_ = kStreamMarkInMeta; }

 private:
  // The mark's byte is not in the first block (out of line: the inline test stays small).
  bool IsStreamFrameSlow(const ChainBuffer& frame) const;
  static constexpr int kStreamMarkInMeta = -2;
  int stream_mark_offset_ = -1;  // -1: the protocol has no stream frames; kStreamMarkInMeta
  uint8_t stream_mark_value_ = 0;
};

}  // namespace trpc
