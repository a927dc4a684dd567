#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "trpc/codec/grpc/detail/h2_session.h"

namespace trpc::grpc::detail {

/// The server role of an HTTP/2 session: streams are requests. Feed() cuts, for each request
/// stream that ended, its one message (prefix removed, inflated) with a ServerRequestMeta; a
/// malformed, oversized or too slow request is answered here (trailers only) and never handed
/// up. EncodeOutput() takes a reply: the length-prefixed message (or nothing) with a
/// ServerReplyMeta, and answers its stream with HEADERS, DATA and trailers.
///
/// Streams whose :path is one of `stream_paths` (the service's streaming methods) are streaming
/// calls instead: Feed() hands up their events as they happen (ServerStreamEventMeta: the open
/// once the headers are in, each message as it completes, the client's half-close or reset,
/// window regained), and the Stream* methods below, called by GrpcServerStreamSession, answer
/// them. Their received DATA goes back to the flow-control windows only as the server's stream
/// reports its messages consumed, so HTTP/2's windows bound what a client can make it hold.
///
/// Thread contract: the connection's loop thread only.
class H2ServerSession final : public H2Session {
 public:
  /// The service's methods by :path, each true when streaming; `complete`: no other path is
  /// answered (a request for another is answered UNIMPLEMENTED on its headers, as gRPC servers
  /// do, so that a client waiting for a response before it ends its stream is not left
  /// waiting). One lookup per request tells both.
  struct Methods {
    std::unordered_map<std::string, bool> streaming;
    bool complete = false;
  };
  explicit H2ServerSession(const H2Options& options,
                           std::shared_ptr<const Methods> methods = nullptr)
      : H2Session(/*server=*/true, options), methods_(std::move(methods)) {}

  // ---- Streaming calls (GrpcServerStreamSession). Each appends what is to be sent to `out`.
  /// The stream may answer (its headers go with its first message or its end).
  void StreamAccept(int32_t stream_id);
  /// True when `stream_id` is open for our messages and the peer's window has room for more
  /// than what waits to be sent. False also asks for a kWritable event once it has.
  bool StreamCanSend(int32_t stream_id);
  /// Queues one message (`msg`, serialized, not yet prefixed) on the stream.
  bool StreamSend(int32_t stream_id, ChainBuffer&& msg, ChainBuffer* out, std::string* err);
  /// The server consumed `n` bytes of the stream's messages (their sizes as handed up): the
  /// DATA that carried them goes back to the windows.
  void StreamConsumed(int32_t stream_id, size_t n, ChainBuffer* out);
  /// Ends the stream with `grpc_status` in the trailers (after what is queued); the client's
  /// further messages are refused (RST_STREAM NO_ERROR once the trailers are out).
  void StreamFinish(int32_t stream_id, int grpc_status, const std::string& message,
                    ChainBuffer* out);
  /// Compresses the stream's messages with `encoding` (gzip, deflate) from its first on, when
  /// the client accepts it (grpc-accept-encoding); else they go uncompressed.
  void StreamSetCompression(int32_t stream_id, const std::string& encoding);
  /// Metadata for the stream's response headers (`trailing` false: before its first message or
  /// end) or its trailers (after grpc-status).
  void StreamSetMetadata(int32_t stream_id, Pairs&& fields, bool trailing);
  /// Streaming calls open now.
  size_t open_streaming() const { return open_streaming_; }

  void EncodeOutput(ChainBuffer&& message, ChainBuffer* out) override;
  /// GOAWAY(NO_ERROR) naming the last stream taken: the streams in flight are still answered.
  void OnShutdown(ChainBuffer* out) override;
  void CancelCall(uint32_t request_id, ChainBuffer* out) override {  // (client side only)
    (void)request_id;
    (void)out;
  }

  int OnBeginFrame(uint8_t type, int32_t stream_id) override;
  int OnBeginHeaders(int32_t stream_id) override;
  int OnHeader(int32_t stream_id, std::string_view name, std::string_view value) override;
  int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) override;
  int OnStreamClose(int32_t stream_id, uint32_t error_code) override;
  /// Fires the cancel signals of the unary calls handed up and not answered.
  void OnConnectionClosed() override;
  void OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code) override;

 private:
  struct Stream : H2Stream {
    std::unique_ptr<ServerRequestMeta> head;  // until handed up
    bool answered = false;                    // a response (or error) was submitted
    bool reset_after_answer = false;          // an early error answer; reset once it is sent
    bool handed_up = false;                   // the request was cut (`head` went with it)
    int64_t opened_ns = 0;                    // when its HEADERS began (request_timeout_ms)
    // What this stream's state counts in held_bytes: kStreamStateBytes, plus its headers
    // until they are handed up.
    size_t state_bytes = 0;
    std::shared_ptr<CancelSignal> cancelled;  // once handed up
    Pairs trailers;                           // sent after `out`
    // A streaming call (its path is a streaming method), from its open event on: H2Stream's
    // streaming part, and ours.
    bool headers_sent = false;    // our response headers are submitted
    std::string encoding;         // grpc-encoding of the client's messages
    std::string accept_encoding;  // the client's grpc-accept-encoding
    Pairs initial;                // response headers' metadata (StreamSetMetadata)
    Pairs trailing;               // trailers' metadata
  };

  H2Stream* FindSending(int32_t stream_id) override { return streams_.Find(stream_id); }
  void OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) override;
  void OnWindowOpened(int32_t stream_id) override;
  // Streaming calls: the headers are in (hands up the open, or answers a bad call); a DATA
  // chunk (cuts its complete messages); the client's END_STREAM.
  void OpenStreaming(Stream* s, int32_t stream_id);
  void StreamingData(Stream* s, int32_t stream_id);
  void StreamingInputEnd(Stream* s, int32_t stream_id);
  // Ends a streaming call for a protocol violation (or a reset from the client): the end event
  // goes up with `grpc_status`; we answer with it unless the client reset the stream.
  void FailStreaming(Stream* s, int32_t stream_id, int grpc_status, const std::string& message);
  // Hands up one event of a streaming call, `msg` its message if any (inside Feed() only).
  std::unique_ptr<ServerStreamEventMeta> NewEvent(ServerStreamEventMeta::Kind kind,
                                                  int32_t stream_id) {
    return std::make_unique<ServerStreamEventMeta>(kind, stream_id, this);
  }
  void Emit(std::unique_ptr<ServerStreamEventMeta> event, ChainBuffer&& msg = ChainBuffer());
  // Submits the streaming call's response headers, with its DATA to follow.
  void SubmitStreamHeaders(Stream* s, int32_t stream_id);
  void OnDataEnd(int32_t stream_id, H2Stream* s, uint32_t* data_flags) override;
  void AfterFeed() override { ExpireSlowRequests(); }
  // Submits the reply `message` (EncodeOutput) to its stream.
  void Respond(ChainBuffer&& message);
  // A request for a method the service does not have: handed up on its headers.
  void HandUpUnknown(Stream* s, int32_t stream_id);
  // The request of `s` is whole: hands it up, or answers it when it is malformed.
  void HandUp(Stream* s, int32_t stream_id);
  // Answers a stream at once with only trailers (an error) and resets what is left.
  void AnswerError(Stream* s, int32_t stream_id, int grpc_status, const std::string& message);
  // Gives back a stream's kept DATA (the request is whole, or dropped).
  void ReleaseData(Stream* s, int32_t stream_id);
  // Answers the requests still incomplete after request_timeout_ms.
  void ExpireSlowRequests();
  // Remembers a stream we reset or refused (OnBeginFrame).
  void KeepResetStream(int32_t stream_id);

  StreamTable<Stream> streams_;
  // The highest stream id the peer opened; the ids of the streams we reset or refused lately
  // (the peer may still send on them), at most kResetStreamsKept; a new stream whose HEADERS
  // has begun and not (yet) opened a stream; whether we sent GOAWAY.
  static constexpr size_t kResetStreamsKept = 1024;
  int32_t highest_peer_stream_ = 0;
  std::set<int32_t> reset_streams_;
  int32_t unopened_ = 0;
  bool goaway_sent_ = false;
  int64_t next_expiry_check_ns_ = 0;
  std::shared_ptr<const Methods> methods_;  // null: no streaming methods, any path answered
  size_t open_streaming_ = 0;
};

}  // namespace trpc::grpc::detail
