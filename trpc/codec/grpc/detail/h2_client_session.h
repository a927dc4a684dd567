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

 private:
  struct Stream : H2Stream {
    std::unique_ptr<ClientReplyMeta> reply = std::make_unique<ClientReplyMeta>();
  };

  H2Stream* FindSending(int32_t stream_id) override { return streams_.Find(stream_id); }
  void OnStreamFrame(uint8_t type, uint8_t flags, int32_t stream_id) override;
  void BeforeFeed() override;
  // Opens the stream of the request `message` (EncodeOutput).
  void Request(ChainBuffer&& message);

  StreamTable<Stream> streams_;
  std::unordered_map<uint32_t, int32_t> stream_of_request_;
  std::vector<ChainBuffer> late_;  // streams that closed outside Feed()
};

}  // namespace trpc::grpc::detail
