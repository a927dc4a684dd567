#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/chain_buffer.h"

namespace trpc {

/// Metadata passed along a call chain (trpc's trans_info).
using TransInfo = std::map<std::string, std::string>;

/// The protocol-specific part of a request or response that the neutral fields cannot carry
/// (HTTP's method, path, headers and status). Made and read by the protocol's codec and its own
/// handlers; the framework only carries it along.
class ProtocolMessage {
 public:
  virtual ~ProtocolMessage() = default;
};

/// RpcRequest/RpcResponse::content_type values (docs/protocol.md).
inline constexpr uint32_t kContentTypeProtobuf = 0;
inline constexpr uint32_t kContentTypeJson = 2;
inline constexpr uint32_t kContentTypeNoop = 4;

/// A decoded request, independent of the protocol that carried it.
/// Everything of a request but its bytes and its protocol part. Copyable, so that a client's
/// next attempt of a call copies all of it in one assignment: a field added here cannot be
/// left out of a retry or a hedge.
struct RpcRequestHead {
  uint32_t version = 0;
  uint32_t call_type = 0;  // 0 unary, 1 one-way (no response is sent)
  uint32_t request_id = 0;
  uint32_t timeout_ms = 0;  // time the caller still allows; 0 = not given
  uint32_t message_type = 0;
  uint32_t content_type = 0;  // 0 protobuf, 2 json, 4 noop (raw bytes)
  /// Body compression, numbered as trpc.proto numbers it (1 gzip, 3 zlib, ...; 0 none), whatever
  /// the protocol: a client sets it to compress the request (ClientContext::SetReqCompressType),
  /// a server replies with the request's. Protocols map it to their own names (gRPC: 1 gzip,
  /// 3 deflate); a codec whose protocol cannot carry it refuses the call.
  uint32_t content_encoding = 0;
  std::string caller;
  std::string callee;
  std::string func;  // "/package.Service/Method"
  TransInfo trans_info;
  /// The reply carries trans_info back to the caller (trpc's rule). Protocols whose peers do not
  /// expect their own metadata back (gRPC) clear it: the reply then has only the handler's.
  bool echo_trans_info = true;
  /// trpc's fixed-header stream id (bytes 10-13) and protocol version (byte 14) of a unary
  /// request. A server copies both into the reply: tRPC-Go's multiplexed clients put their
  /// request id there and match replies by it, not by request_id. 0 from other protocols.
  uint32_t frame_stream_id = 0;
  uint8_t frame_version = 0;
  /// Client side: the backend the request goes to, "ip:port" (HTTP's Host); empty when not
  /// known. Borrowed from the caller: valid during EncodeRequest only.
  std::string_view authority;
};

struct RpcRequest : RpcRequestHead {
  ChainBuffer body;
  ChainBuffer attachment;
  std::unique_ptr<ProtocolMessage> protocol;  // null for protocols that need none
  /// Server side: fires when the client cancels this one call (gRPC's RST_STREAM), set by codecs
  /// whose protocol can; null otherwise (then the call's cancellation is its connection's close,
  /// ServerContext::GetCancelSignal).
  std::shared_ptr<CancelSignal> cancel_signal;
};

/// A response, independent of the protocol that carries it.
struct RpcResponse {
  uint32_t version = 0;
  uint32_t call_type = 0;
  uint32_t request_id = 0;
  int32_t ret = 0;       // framework code (base/status.h)
  int32_t func_ret = 0;  // the handler's own code
  std::string error_msg;
  uint32_t message_type = 0;
  uint32_t content_type = 0;
  uint32_t content_encoding = 0;
  uint32_t frame_stream_id = 0;  // as RpcRequestHead's: copied from the request
  uint8_t frame_version = 0;
  TransInfo trans_info;
  ChainBuffer body;
  ChainBuffer attachment;
  /// Set by a protocol's own handler (an HTTP handler's status, headers and body); when set,
  /// the codec encodes it instead of the neutral fields. Null otherwise.
  std::unique_ptr<ProtocolMessage> protocol;
  /// The same, borrowed (used when `protocol` is null): a handler's reply that lives on its
  /// stack until the reply is encoded, so the common synchronous case allocates nothing for it.
  const ProtocolMessage* protocol_ref = nullptr;
  /// The protocol-specific reply, owned or borrowed; null if none.
  const ProtocolMessage* protocol_reply() const {
    return protocol != nullptr ? protocol.get() : protocol_ref;
  }
  /// The request's protocol part, for encoding the answer (HTTP: HEAD, version, keep-alive).
  /// Borrowed: valid during EncodeResponse only. Null when the request had none.
  const ProtocolMessage* request_protocol = nullptr;
};

inline constexpr uint32_t kUnaryCall = 0;
inline constexpr uint32_t kOnewayCall = 1;

}  // namespace trpc
