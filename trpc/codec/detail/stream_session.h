#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/rpc_message.h"
#include "trpc/codec/stream_options.h"

namespace trpc {

/// A message's own options on its way to the stream session, riding as the meta of its bytes
/// (stream::WriteOptions as the handler gave them).
struct StreamMessageOptions final : MessageMeta {
  std::unique_ptr<MessageMeta> Copy() const override {
    return std::make_unique<StreamMessageOptions>(*this);
  }
  /// Sent uncompressed even on a stream that compresses its messages (gRPC flags each one).
  bool no_compression = false;
};

/// Attaches `opts` to a message's bytes as its StreamMessageOptions (nothing when they are the
/// defaults, so a plain write allocates nothing).
void AttachWriteOptions(const stream::WriteOptions& opts, ChainBuffer* bytes);

/// What a protocol's stream session does alike on either end of a connection, for one stream:
/// send its messages under the peer's window, return credit for what was read, end our side.
/// Every output goes to `out`, for the caller to send on the connection in order.
/// ServerStreamSession and ClientStreamSession add what each end does of its own (accepting,
/// opening, reading the peer's frames).
///
/// Thread contract: the connection's loop thread only.
class StreamSession {
 public:
  virtual ~StreamSession() = default;

  /// Stream `id` counts its window (both ends announced one).
  virtual bool FlowControlled(uint32_t id) const = 0;
  /// True when stream `id` is open for our messages and its window has room.
  virtual bool CanSend(uint32_t id) const = 0;
  /// Sends one encoded message on `id`. False (with `*err`, nothing written) when it may not be
  /// sent now (see CanSend) or does not fit a frame.
  virtual bool SendMessage(uint32_t id, ChainBuffer&& msg, ChainBuffer* out, std::string* err) = 0;
  /// Our side consumed `n` bytes of `id`'s messages: return credit when due.
  virtual void Consumed(uint32_t id, size_t n, ChainBuffer* out) = 0;
  /// Ends our side of `id` with `status` (what each end makes of a status: see its session).
  virtual void Finish(uint32_t id, const Status& status, ChainBuffer* out) = 0;
  /// Streams open now.
  virtual size_t open_streams() const = 0;
  /// The session counts the received bytes its streams' readers have not consumed yet in the
  /// connection's held bytes itself (gRPC's HTTP/2 session does, until they are reported
  /// consumed); otherwise the stream's end counts them (StreamCore), not both.
  virtual bool CountsUnreadBytes() const { return false; }
  /// Metadata for `id`'s start (before its first message or its end: gRPC's response headers)
  /// and its end (just before Finish: gRPC's trailers). The default drops them (trpc's stream
  /// frames carry none from a server).
  virtual void SetInitialMetadata(uint32_t id, TransInfo&& md) {
    (void)id;
    (void)md;
  }
  virtual void SetTrailingMetadata(uint32_t id, TransInfo&& md) {
    (void)id;
    (void)md;
  }
};

}  // namespace trpc
