#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "trpc/codec/grpc/detail/h2_session.h"

namespace trpc::grpc::detail {

/// The server role of an HTTP/2 session: streams are requests. Feed() cuts, for each request
/// stream that ended, its one message (prefix removed, inflated) with a ServerRequestMeta; a
/// malformed, oversized or too slow request is answered here (trailers only) and never handed
/// up. EncodeOutput() takes a reply: the length-prefixed message (or nothing) with a
/// ServerReplyMeta, and answers its stream with HEADERS, DATA and trailers.
///
/// Thread contract: the connection's loop thread only.
class H2ServerSession final : public H2Session {
 public:
  explicit H2ServerSession(const H2Options& options) : H2Session(/*server=*/true, options) {}

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
  void OnFrameSent(uint8_t type, uint8_t flags, int32_t stream_id, uint32_t error_code) override;

 private:
  struct Stream : H2Stream {
    std::unique_ptr<ServerRequestMeta> head;  // until handed up
    bool answered = false;                    // a response (or error) was submitted
    bool reset_after_answer = false;          // an early error answer; reset once it is sent
    bool handed_up = false;                   // the request was cut (`head` went with it)
    // DATA bytes kept in `data` and not yet given back to the peer's flow-control windows
    // (nghttp2_session_consume): a client can have at most the connection's window in flight.
    size_t unconsumed = 0;
    int64_t opened_ns = 0;  // when its HEADERS began (request_timeout_ms)
    // What this stream's state counts in held_bytes: kStreamStateBytes, plus its headers
    // until they are handed up.
    size_t state_bytes = 0;
    std::shared_ptr<std::atomic<bool>> cancelled;  // once handed up
    Pairs trailers;                                // sent after `out`
  };

  H2Stream* FindSending(int32_t stream_id) override { return streams_.Find(stream_id); }
  void OnStreamFrame(uint8_t flags, int32_t stream_id) override;
  void OnDataEnd(int32_t stream_id, H2Stream* s, uint32_t* data_flags) override;
  void AfterFeed() override { ExpireSlowRequests(); }
  // Submits the reply `message` (EncodeOutput) to its stream.
  void Respond(ChainBuffer&& message);
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
};

}  // namespace trpc::grpc::detail
