#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/grpc/detail/call_meta.h"
#include "trpc/codec/grpc/detail/h2_flood_guard.h"
#include "trpc/transport/frame_codec.h"

struct nghttp2_session;

namespace trpc::grpc::detail {

/// Limits of one HTTP/2 connection. Every one is a `protocol_options` key of a gRPC service
/// (docs/grpc.md) with this default.
struct H2Options {
  /// SETTINGS_MAX_CONCURRENT_STREAMS we announce: streams beyond it are refused (REFUSED_STREAM).
  uint32_t max_concurrent_streams = 100;
  /// SETTINGS_MAX_HEADER_LIST_SIZE we announce and enforce (bytes as HTTP/2 counts them: name +
  /// value + 32 per field). A larger header list resets its stream; kMaxHeaderStrikes of them
  /// end the connection (HPACK bombs).
  uint32_t max_header_list_size = 16u << 10;
  /// Largest message received (the bytes of one request or response, compressed or not, and
  /// again after inflating): a larger one is answered with RESOURCE_EXHAUSTED, the connection
  /// keeps serving.
  size_t max_message_size = 4u << 20;
  /// Flow-control windows we announce: per stream (SETTINGS_INITIAL_WINDOW_SIZE) and for the
  /// whole connection. Large enough that a 4 MiB message never waits for a WINDOW_UPDATE. A
  /// server gives a request's bytes back only once the request is whole, so the connection
  /// window bounds what one client connection can make it hold; both are raised to
  /// max_message_size (+5) when smaller, or such a message could never arrive.
  uint32_t initial_window_size = 8u << 20;
  uint32_t connection_window_size = 16u << 20;
  /// A request (headers and message) must be whole this long after its HEADERS began, else it
  /// is answered DEADLINE_EXCEEDED and its stream reset (a slow or stalled upload cannot hold a
  /// stream slot); 0 = no limit. Checked as the connection's input arrives.
  uint32_t request_timeout_ms = 10'000;
  /// Rapid reset: RST_STREAM frames a client may send, as a token bucket (burst, then per
  /// second); beyond it the connection ends with GOAWAY.
  uint32_t max_rst_stream_burst = 1000;
  uint32_t max_rst_stream_per_second = 100;
  /// Frames a peer may send per second that carry nothing (PING, SETTINGS, empty DATA,
  /// PRIORITY, unearned WINDOW_UPDATE): beyond one, the connection ends with
  /// GOAWAY(ENHANCE_YOUR_CALM). A client session applies the defaults to its server.
  FloodLimits floods;
};

/// Header lists over max_header_list_size that a connection may send before it is closed.
inline constexpr int kMaxHeaderStrikes = 3;

/// What a server counts in held_bytes (against max_buffered_bytes) for each open stream, besides
/// its headers and DATA: an estimate of nghttp2's stream (~400 bytes) and ours with its
/// request head and their allocations.
inline constexpr size_t kStreamStateBytes = 1024;

/// One HTTP/2 connection's protocol state on nghttp2 (framing, HPACK, flow control, stream
/// bookkeeping), as the transport's per-connection codec state. Server or client role.
///
/// What goes in and out: buffers that carry the typed per-call metadata of call_meta.h.
/// - server: Feed() cuts, for each request stream that ended, its one message (prefix removed,
///   inflated) with a ServerRequestMeta; a malformed request is answered here. EncodeOutput()
///   takes a reply: the length-prefixed message (or nothing) with a ServerReplyMeta.
/// - client: EncodeOutput() takes a request: the length-prefixed message with a
///   ClientRequestMeta; Feed() cuts, for each stream that closed, its DATA with a
///   ClientReplyMeta (the response's or the error's).
///
/// Thread contract: the connection's loop thread only (as every FrameCodecState).
class H2Session final : public FrameCodecState {
 public:
  enum class Role { kServer, kClient };
  H2Session(Role role, const H2Options& options);
  ~H2Session() override;
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  /// Feeds the bytes read; appends the frames of the streams that completed to `out`; bytes
  /// to send (SETTINGS ACK, WINDOW_UPDATE, data that waited for the window, GOAWAY) go to
  /// `immediate`. kError (with `*err`, and the GOAWAY in `immediate`) ends the connection.
  SplitResult Feed(ChainBuffer* in, std::vector<ChainBuffer>* out, std::string* err);

  void EncodeOutput(ChainBuffer&& message, ChainBuffer* out) override;
  void CancelCall(uint32_t request_id, ChainBuffer* out) override;
  /// GOAWAY(NO_ERROR) naming the last stream taken: the streams in flight are still answered.
  void OnShutdown(ChainBuffer* out) override;

  // nghttp2 callbacks (C linkage trampolines call these).
  int OnBeginFrame(uint8_t type, int32_t stream_id);
  int OnBeginHeaders(int32_t stream_id);
  int OnHeader(int32_t stream_id, uint8_t frame_type, std::string_view name,
               std::string_view value);
  int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len);
  int OnFrameRecv(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code);
  int OnStreamClose(int32_t stream_id, uint32_t error_code);
  void OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code);
  long ReadData(int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags);

 private:
  struct Stream;
  Stream* Find(int32_t stream_id);
  void Erase(int32_t stream_id);
  void Drain(ChainBuffer* out);
  void EncodeResponse(ChainBuffer&& message, ChainBuffer* out);
  void EncodeRequest(ChainBuffer&& message, ChainBuffer* out);
  // Server: answers a stream at once with only trailers (an error) and resets what is left.
  void AnswerError(Stream* s, int32_t stream_id, int grpc_status, const std::string& message);
  void Terminate(uint32_t error_code, std::string why);
  // Gives `n` received bytes back to the flow-control windows: the stream's and the
  // connection's, or (null `s`: no stream, or one that is closing) the connection's only.
  void Consume(Stream* s, int32_t stream_id, size_t n);
  // Server: gives back a stream's kept DATA (the request is whole, or dropped).
  void ReleaseData(Stream* s, int32_t stream_id);
  // Server: answers the requests still incomplete after request_timeout_ms.
  void ExpireSlowRequests();
  // Server: remembers a stream we reset or refused (OnBeginFrame).
  void KeepResetStream(int32_t stream_id);

  Role role_;
  H2Options options_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams_;
  int32_t last_id_ = 0;  // Find()'s one-entry cache
  Stream* last_ = nullptr;
  std::unordered_map<uint32_t, int32_t> stream_of_request_;  // client
  std::vector<ChainBuffer>* sink_ = nullptr;                 // Feed()'s output while it runs
  std::vector<ChainBuffer> late_;  // client: streams that closed outside Feed()
  H2FloodGuard flood_guard_;
  // Server: the highest stream id the peer opened; the ids of the streams we reset or refused
  // lately (the peer may still send on them), at most kResetStreamsKept; a new stream whose
  // HEADERS has begun and not (yet) opened a stream; whether we sent GOAWAY.
  static constexpr size_t kResetStreamsKept = 1024;
  int32_t highest_peer_stream_ = 0;
  std::set<int32_t> reset_streams_;
  int32_t unopened_ = 0;
  bool goaway_sent_ = false;
  int header_strikes_ = 0;
  int64_t next_expiry_check_ns_ = 0;
  std::string fatal_;  // why we ended the connection (GOAWAY with an error), if we did
};

}  // namespace trpc::grpc::detail
