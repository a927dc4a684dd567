#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trpc/codec/grpc/detail/h2_session.h"

namespace trpc::grpc::detail {

/// The client role of an HTTP/2 session: a call per stream. EncodeOutput() takes a request (the
/// length-prefixed message with a ClientRequestMeta) and opens its stream; Feed() cuts, for
/// each stream that closed, its DATA with a ClientReplyMeta (the response's, or the error's).
///
/// Thread contract: the connection's loop thread only.
class H2ClientSession final : public H2Session {
 public:
  explicit H2ClientSession(const H2Options& options) : H2Session(/*server=*/false, options) {}
  void OnShutdown(ChainBuffer* out) override { (void)out; }  // (a client has nothing to announce)

  void EncodeOutput(ChainBuffer&& message, ChainBuffer* out) override;
  /// Resets the call's stream (RST_STREAM CANCEL): the call was given up.
  void CancelCall(uint32_t request_id, ChainBuffer* out) override;

  int OnBeginFrame(uint8_t type, int32_t stream_id) override;
  int OnBeginHeaders(int32_t stream_id) override;
  int OnHeader(int32_t stream_id, std::string_view name, std::string_view value) override;
  int OnDataChunk(int32_t stream_id, const uint8_t* data, size_t len) override;
  int OnStreamClose(int32_t stream_id, uint32_t error_code) override;

  // ---- Streaming calls (GrpcClientStreamSession). Each appends what is to be sent to `out`.
  /// Opens a streaming call to `path` with the headers of `head` (authority, grpc-timeout,
  /// metadata); its stream id in `*stream_id`. Its messages follow (StreamSend), then its end
  /// (StreamFinish). False (with `*err`) when no stream can be opened.
  bool StreamOpen(const ClientRequestMeta& head, int32_t* stream_id, ChainBuffer* out,
                  std::string* err);
  bool StreamCanSend(int32_t stream_id);
  bool StreamSend(int32_t stream_id, ChainBuffer&& msg, ChainBuffer* out, std::string* err);
  void StreamConsumed(int32_t stream_id, size_t n, ChainBuffer* out);
  /// `ok`: half-close (END_STREAM after the queued messages); else a cancel (RST_STREAM).
  void StreamFinish(int32_t stream_id, bool ok, ChainBuffer* out);
  size_t open_streaming() const { return open_streaming_; }

 private:
  struct Stream : H2Stream {
    std::unique_ptr<ClientReplyMeta> reply = std::make_unique<ClientReplyMeta>();
  };
  // A streaming call's end: hands up kEnd once (inside Feed() only).
  void EndStreaming(Stream* s, int32_t stream_id, int grpc_status, std::string message, bool reset);
  void OnWindowOpened(int32_t stream_id) override;

  H2Stream* FindSending(int32_t stream_id) override { return streams_.Find(stream_id); }
  void OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) override;
  void BeforeFeed() override;
  // Opens the stream of the request `message` (EncodeOutput).
  void Request(ChainBuffer&& message);

  StreamTable<Stream> streams_;
  std::unordered_map<uint32_t, int32_t> stream_of_request_;
  std::vector<ChainBuffer> late_;  // streams that closed outside Feed()
  size_t open_streaming_ = 0;
};

}  // namespace trpc::grpc::detail
