#pragma once

#include <nghttp2/nghttp2.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/grpc/detail/call_meta.h"
#include "trpc/codec/grpc/detail/h2_flood_guard.h"
#include "trpc/transport/frame_codec.h"

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

/// A stream's part that both roles have: what it received and what it still sends.
struct H2Stream {
  ChainBuffer data;         // DATA received (server: the request; client: the response)
  size_t header_bytes = 0;  // its header list so far, as max_header_list_size counts it
  bool too_large = false;   // the message passed max_message_size: its bytes are dropped
  bool peer_reset = false;  // the peer sent RST_STREAM (else a reset is our own)
  ChainBuffer out;          // DATA still to send
  // A stream's messages (server streaming): an empty `out` means "more later", not the end;
  // ReadData defers the stream (`deferred`) until ResumeData().
  bool more_data = false;
  bool deferred = false;
  // DATA bytes received and not yet given back to the peer's flow-control windows
  // (nghttp2_session_consume): the peer can have at most the windows in flight. A streaming
  // call counts them in held_bytes until given back, messages handed up and not yet read
  // included, so the process's buffer bound sees what a reader that does not read holds.
  size_t unconsumed = 0;

  // A streaming call: its messages go up one by one as they complete.
  bool streaming = false;
  bool finished = false;       // our side ended
  bool remote_ended = false;   // the peer ended its side, or the end event went up
  bool want_writable = false;  // a writer waits for window (StreamCanSend said no)
  // The messages handed up and not yet reported consumed: their sizes as handed up and as
  // received (compressed), oldest first; `consumed_carry`: reported bytes not yet matched.
  std::deque<std::pair<size_t, size_t>> credit;
  size_t consumed_carry = 0;
  // grpc-encoding our messages on this stream are compressed with (empty: none).
  std::string out_encoding;
};

/// What NextMessage() found at the front of a streaming call's received DATA.
enum class MessageCut { kMessage, kNeedMore, kBad };

/// The streams of one session by id, with a one-entry cache: the callbacks of one frame (a
/// HEADERS block calls OnHeader per field) ask for one stream in a row.
template <typename S>
class StreamTable {
 public:
  S* Find(int32_t id) {
    if (id == last_id_ && last_ != nullptr) return last_;
    auto it = map_.find(id);
    if (it == map_.end()) return nullptr;
    last_id_ = id;
    last_ = it->second.get();
    return last_;
  }
  S* Add(int32_t id, std::unique_ptr<S> s) {
    return map_.emplace(id, std::move(s)).first->second.get();
  }
  void Erase(int32_t id) {
    if (id == last_id_) last_ = nullptr;
    map_.erase(id);
  }
  std::unordered_map<int32_t, std::unique_ptr<S>>& all() { return map_; }

 private:
  std::unordered_map<int32_t, std::unique_ptr<S>> map_;
  int32_t last_id_ = 0;
  S* last_ = nullptr;
};

/// One HTTP/2 connection's protocol state on nghttp2 (framing, HPACK, flow control, stream
/// bookkeeping), as the transport's per-connection codec state: what both roles share. The
/// roles are H2ServerSession (h2_server_session.h) and H2ClientSession (h2_client_session.h);
/// each owns its streams and answers nghttp2's callbacks for them.
///
/// What goes in and out: buffers that carry the typed per-call metadata of call_meta.h. Feed()
/// cuts what completed (a request, a response) into frames; EncodeOutput() takes a message the
/// codec made (a reply, a request) and appends the wire bytes. Bytes owed to the peer outside
/// any message (SETTINGS ACK, WINDOW_UPDATE, data that waited for the window, GOAWAY) go to
/// `immediate`.
///
/// Thread contract: the connection's loop thread only (as every FrameCodecState).
class H2Session : public FrameCodecState, public CallSession {
 public:
  ~H2Session() override;
  CallSession* session() override { return this; }
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  /// Feeds the bytes read; appends the frames of the streams that completed to `out`; bytes
  /// to send go to `immediate`. kError (with `*err`, and the GOAWAY in `immediate`) ends the
  /// connection.
  SplitResult Feed(ChainBuffer* in, std::vector<ChainBuffer>* out, std::string* err);

  // nghttp2 callbacks (C linkage trampolines call these).
  virtual int OnBeginFrame(uint8_t type, int32_t stream_id) = 0;
  virtual int OnBeginHeaders(int32_t stream_id) = 0;
  virtual int OnHeader(int32_t stream_id, std::string_view name, std::string_view value) = 0;
  virtual int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) = 0;
  int OnFrameRecv(uint8_t type, uint8_t flags, int32_t stream_id);
  virtual int OnStreamClose(int32_t stream_id, uint32_t error_code) = 0;
  virtual void OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code);
  long ReadData(int32_t stream_id, uint8_t* buf, size_t length, uint32_t* data_flags);

 protected:
  H2Session(bool server, const H2Options& options);
  /// The stream nghttp2 reads DATA from (ReadData), or null.
  virtual H2Stream* FindSending(int32_t stream_id) = 0;
  /// A HEADERS or DATA frame (`type`) arrived whole.
  virtual void OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) = 0;
  /// The peer gave window (WINDOW_UPDATE on `stream_id`, 0 for the connection) or changed the
  /// initial window (SETTINGS, `stream_id` 0).
  virtual void OnWindowOpened(int32_t stream_id) { (void)stream_id; }
  /// New DATA in the `out` of a stream that ReadData deferred: nghttp2 reads it again.
  void ResumeData(int32_t stream_id, H2Stream* s);

  // ---- Streaming calls, both roles ----
  /// Cuts the next whole message off `s->data` into `*msg` (prefix removed, inflated with
  /// `encoding` when flagged, then `*compressed` is set), noting its credit and giving its
  /// prefix back to the windows; on kBad, the gRPC code and text of what was wrong.
  MessageCut NextMessage(H2Stream* s, int32_t stream_id, const std::string& encoding,
                         ChainBuffer* msg, bool* compressed, int* code, std::string* why);
  /// Gives `n` of a stream's received bytes back to its windows now (at most what it holds).
  void GiveBack(H2Stream* s, int32_t stream_id, size_t n);
  /// The reader consumed `n` bytes of messages: the DATA that carried them goes back.
  void ConsumedOn(H2Stream* s, int32_t stream_id, size_t n, ChainBuffer* out);
  /// The peer's window has room beyond what waits in `s->out`; false asks for a writable
  /// event (want_writable).
  bool CanSendOn(H2Stream* s, int32_t stream_id);
  /// Queues one message (serialized, not yet prefixed) on `s`, compressed with its
  /// out_encoding if it has one. False if it could not be compressed.
  bool QueueMessage(H2Stream* s, ChainBuffer&& msg);
  /// A stream's DATA is all out (`*data_flags` has NGHTTP2_DATA_FLAG_EOF): a server adds
  /// NO_END_STREAM and sends its trailers.
  virtual void OnDataEnd(int32_t stream_id, H2Stream* s, uint32_t* data_flags) {
    (void)stream_id;
    (void)s;
    (void)data_flags;
  }
  /// Feed()'s hooks: before the input (frames owed from earlier), after it (timers).
  virtual void BeforeFeed() {}
  virtual void AfterFeed() {}
  /// Counts a header field against max_header_list_size: false when the list is over it (the
  /// stream is to be reset: kResetStream; kMaxHeaderStrikes of them end the connection).
  bool CountHeader(H2Stream* s, std::string_view name, std::string_view value, int* rv);
  void Drain(ChainBuffer* out);
  void Terminate(uint32_t error_code, std::string why);
  // Gives `n` received bytes back to the flow-control windows: the stream's and the
  // connection's, or (not `stream`: no stream, or one that is closing) the connection's only.
  void Consume(bool stream, int32_t stream_id, size_t n);
  /// The message passed max_message_size: the text of the error.
  std::string TooLargeMessage() const;

  H2Options options_;
  nghttp2_session* session_ = nullptr;
  std::vector<ChainBuffer>* sink_ = nullptr;  // Feed()'s output while it runs
  std::string fatal_;  // why we ended the connection (GOAWAY with an error), if we did

 private:
  H2FloodGuard flood_guard_;
  int header_strikes_ = 0;
};

/// The read callback of a data provider: the session's ReadData.
ssize_t ReadDataCallback(nghttp2_session* session, int32_t stream_id, uint8_t* buf, size_t length,
                         uint32_t* data_flags, nghttp2_data_source* source, void* user_data);

/// nghttp2's name-value pair viewing `name` and `value` (which must outlive its use).
inline nghttp2_nv MakeNv(std::string_view name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

}  // namespace trpc::grpc::detail
