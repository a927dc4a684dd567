#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/stream_session.h"
#include "trpc/codec/rpc_message.h"

namespace trpc {

/// What a protocol's stream session tells the server about the streams of one connection
/// (implemented by the server's stream path). Called on the connection's loop thread, from
/// inside ServerStreamSession::OnFrame.
class ServerStreamHost {
 public:
  /// A client opened stream `id`; `head` has its method and metadata (func, caller, callee,
  /// trans_info, content type and encoding). Before returning, the host must call the
  /// session's Accept(id) or Refuse(id, ...).
  virtual void OnStreamOpen(uint32_t id, RpcRequest&& head, ChainBuffer* out) = 0;
  /// One message of stream `id`, as the peer encoded it (possibly compressed).
  virtual void OnStreamMessage(uint32_t id, ChainBuffer&& msg) = 0;
  /// The peer ended its side of stream `id`: OK for a half-close (no more messages come), else
  /// the stream is gone (reset by the peer, or by us for a protocol violation) with that status.
  virtual void OnStreamRemoteEnd(uint32_t id, const Status& status) = 0;
  /// Stream `id` may send again (the peer returned window).
  virtual void OnStreamWritable(uint32_t id) = 0;

 protected:
  ~ServerStreamHost() = default;
};

/// A protocol's streams on one server connection: reads stream frames, keeps each stream's
/// order and flow control, and writes the frames the server's stream code asks for. Every
/// output goes to `out`, for the caller to send on the connection in order.
///
/// Thread contract: the connection's loop thread only.
class ServerStreamSession : public StreamSession {
 public:
  /// One stream frame, as the codec's IsStreamFrame() recognised it. False (with `*err`) when
  /// the peer broke the protocol in a way that ends the connection.
  virtual bool OnFrame(ChainBuffer&& frame, ServerStreamHost* host, ChainBuffer* out,
                       std::string* err) = 0;

  /// Answers the client's open of `id`: accepted, or refused with `status` (the stream ends).
  virtual void Accept(uint32_t id, ChainBuffer* out) = 0;
  virtual void Refuse(uint32_t id, const Status& status, ChainBuffer* out) = 0;

  /// StreamSession::Finish: a success or an application error closes our side, a framework
  /// error resets the stream (and with it the peer's side).
};

}  // namespace trpc
