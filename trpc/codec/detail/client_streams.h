#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/detail/stream_session.h"
#include "trpc/codec/rpc_message.h"

namespace trpc {

/// What a protocol's client stream session tells its owner about the streams of one connection.
/// Called on the connection's loop thread, from inside ClientStreamSession::OnFrame.
class ClientStreamHost {
 public:
  /// The server answered the open of `id`: OK (messages may flow), or refused (the stream is
  /// gone) with its code.
  virtual void OnStreamOpened(uint32_t id, const Status& status) = 0;
  /// One message of stream `id`, as the server encoded it (possibly compressed).
  virtual void OnStreamMessage(uint32_t id, ChainBuffer&& msg) = 0;
  /// The server ended its side of `id` with `status`, its final status (OK, an application
  /// error, or a framework error). `reset`: both sides ended (nothing more may be sent);
  /// otherwise the server closed only its side.
  virtual void OnStreamRemoteEnd(uint32_t id, const Status& status, bool reset) = 0;
  /// Stream `id` may send again (the server returned window).
  virtual void OnStreamWritable(uint32_t id) = 0;

 protected:
  ~ClientStreamHost() = default;
};

/// A protocol's streams on one client connection, the client's half of ServerStreamSession: it
/// numbers and opens streams, reads the server's stream frames and keeps each stream's order and
/// flow control. Every output goes to `out`, for the caller to send in order.
///
/// Thread contract: the connection's loop thread only.
class ClientStreamSession : public StreamSession {
 public:
  /// Opens a stream for the call `head` describes (func, callee, caller, trans_info, content
  /// type and encoding), reading with `window` bytes (0: no flow control). Its id in `*id`.
  /// False (with `*err`) at the cap on open streams or when the ids are used up.
  virtual bool Open(const RpcRequest& head, uint32_t window, uint32_t* id, ChainBuffer* out,
                    std::string* err) = 0;
  /// True when an open is answered by sending it (gRPC: a stream starts with its request
  /// headers, and a server may answer nothing before its end): the stream is usable at once,
  /// and a refusal comes as its end. False: OnStreamOpened brings the server's answer (trpc).
  virtual bool OpensAtOnce() const { return false; }
  /// The content encoding a stream's core compresses its messages with, for a stream opened
  /// asking for `requested`: `requested` (trpc), or 0 where the session compresses each
  /// message itself (gRPC, whose messages carry their own flag).
  virtual uint32_t CoreEncoding(uint32_t requested) const { return requested; }
  /// One stream frame from the server. False (with `*err`) when it broke the protocol in a way
  /// that ends the connection.
  virtual bool OnFrame(ChainBuffer&& frame, ClientStreamHost* host, ChainBuffer* out,
                       std::string* err) = 0;

  /// StreamSession::Finish: OK half-closes (no more messages from us), an error resets the
  /// stream with its code (a cancel: 161).
};

}  // namespace trpc
