#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/codec/detail/client_streams.h"
#include "trpc/codec/detail/server_streams.h"

namespace trpc::grpc::detail {

/// The initial-metadata key through which a server stream asks for its messages to be
/// compressed (grpc::SetResponseCompression); it is not sent as a header.
inline constexpr std::string_view kStreamCompressionKey = "grpc-encoding";

class H2ClientSession;
class H2ServerSession;

/// The server's stream session for gRPC streaming calls: a thin view of the connection's HTTP/2
/// session (H2ServerSession), which does the framing, flow control and trailers. Its frames are
/// the events that session handed up (ServerStreamEventMeta); the first one binds this view to
/// it. HTTP/2 counts every stream's window, so every stream is flow-controlled; the cap on open
/// streams is HTTP/2's max_concurrent_streams (a protocol option), not the server's
/// max_streams_per_connection.
///
/// Thread contract: the connection's loop thread only.
class GrpcServerStreamSession final : public ServerStreamSession {
 public:
  bool FlowControlled(uint32_t id) const override {
    (void)id;
    return true;
  }
  bool CanSend(uint32_t id) const override;
  bool SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out, std::string* err) override;
  void Consumed(uint32_t id, size_t n, ChainBuffer* out) override;
  /// Trailers with the status's gRPC code (docs/grpc.md's table) after what is queued.
  void Finish(uint32_t id, const Status& status, ChainBuffer* out) override;
  size_t open_streams() const override;
  /// HTTP/2's held bytes include every unconsumed byte (H2Session).
  bool CountsUnreadBytes() const override { return true; }
  /// Response headers, and trailers after grpc-status (keys and values as unary calls send
  /// them: docs/grpc.md).
  void SetInitialMetadata(uint32_t id, TransInfo&& md) override;
  void SetTrailingMetadata(uint32_t id, TransInfo&& md) override;

  bool OnFrame(ChainBuffer&& frame, ServerStreamHost* host, ChainBuffer* out,
               std::string* err) override;
  void Accept(uint32_t id, ChainBuffer* out) override;
  void Refuse(uint32_t id, const Status& status, ChainBuffer* out) override;

 private:
  H2ServerSession* h2_ = nullptr;
};

/// The client's half: a view of the connection's H2ClientSession. A stream opens with its
/// request headers and is usable at once (OpensAtOnce); the server's status comes as its end.
///
/// Thread contract: the connection's loop thread only.
class GrpcClientStreamSession final : public ClientStreamSession {
 public:
  explicit GrpcClientStreamSession(H2ClientSession* h2) : h2_(h2) {}
  bool FlowControlled(uint32_t id) const override {
    (void)id;
    return true;
  }
  bool CanSend(uint32_t id) const override;
  bool SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out, std::string* err) override;
  void Consumed(uint32_t id, size_t n, ChainBuffer* out) override;
  /// OK half-closes (END_STREAM); an error cancels (RST_STREAM CANCEL).
  void Finish(uint32_t id, const Status& status, ChainBuffer* out) override;
  size_t open_streams() const override;
  /// HTTP/2's held bytes include every unconsumed byte (H2Session).
  bool CountsUnreadBytes() const override { return true; }

  /// `head`: func (the :path), trans_info (metadata), authority. No grpc-timeout: a stream
  /// has no deadline (docs/streaming.md).
  bool Open(const RpcRequest& head, uint32_t window, uint32_t* id, ChainBuffer* out,
            std::string* err) override;
  bool OpensAtOnce() const override { return true; }
  /// The session compresses (and flags) each message itself: the stream's core sends plain.
  uint32_t CoreEncoding(uint32_t requested) const override {
    (void)requested;
    return 0;
  }
  bool OnFrame(ChainBuffer&& frame, ClientStreamHost* host, ChainBuffer* out,
               std::string* err) override;

 private:
  H2ClientSession* h2_;
};

}  // namespace trpc::grpc::detail
