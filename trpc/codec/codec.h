#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/transport/frame_codec.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

/// Metadata passed along a call chain (trpc's trans_info; HTTP headers later).
using TransInfo = std::map<std::string, std::string>;

/// The protocol-specific part of a request or response that the neutral fields cannot carry
/// (HTTP's method, path, headers and status). Made and read by the protocol's codec and its own
/// handlers; the framework only carries it along.
class ProtocolMessage {
 public:
  virtual ~ProtocolMessage() = default;
};

/// RpcRequest/RpcResponse::content_type values (PROTOCOL.md).
inline constexpr uint32_t kContentTypeProtobuf = 0;
inline constexpr uint32_t kContentTypeJson = 2;
inline constexpr uint32_t kContentTypeNoop = 4;

/// A decoded request, independent of the protocol that carried it.
struct RpcRequest {
  uint32_t version = 0;
  uint32_t call_type = 0;  // 0 unary, 1 one-way (no response is sent)
  uint32_t request_id = 0;
  uint32_t timeout_ms = 0;  // time the caller still allows; 0 = not given
  uint32_t message_type = 0;
  uint32_t content_type = 0;      // 0 protobuf, 2 json, 4 noop (raw bytes)
  uint32_t content_encoding = 0;  // 0 none
  std::string caller;
  std::string callee;
  std::string func;  // "/package.Service/Method"
  TransInfo trans_info;
  ChainBuffer body;
  ChainBuffer attachment;
  std::unique_ptr<ProtocolMessage> protocol;  // null for protocols that need none
  /// Client side: the backend the request goes to, "ip:port" (HTTP's Host); empty when not
  /// known. Borrowed from the caller: valid during EncodeRequest only.
  std::string_view authority;
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

/// The server half of a protocol. One instance per listening service; Split/Decode/Encode may
/// run on many threads at once, so implementations keep no mutable state.
class ServerCodec : public FrameCodec {
 public:
  virtual std::string_view Name() const = 0;
  /// Decodes one frame cut by Split(). False (with `*err`) means the peer sent garbage: no reply
  /// is sent and the connection closes.
  virtual bool DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) = 0;
  /// DecodeRequest() with the connection's split state (null when the codec made none); the
  /// server always calls this one, on the connection's loop thread, for every frame in order.
  virtual bool DecodeRequestWithState(ChainBuffer&& frame, FrameCodecState* state, RpcRequest* req,
                                      std::string* err) {
    (void)state;
    return DecodeRequest(std::move(frame), req, err);
  }
  /// Appends the encoded response to `out`. The body is `body_msg` serialized if it is non-null,
  /// else the bytes of `rsp->body`; `rsp->body` and `rsp->attachment` are moved out, the other
  /// fields only read. A response with ret != 0 carries no body or attachment. False means the
  /// response could not be encoded (then `out` is unchanged).
  virtual bool EncodeResponse(RpcResponse* rsp, const google::protobuf::MessageLite* body_msg,
                              ChainBuffer* out) = 0;
  /// A codec set up with a service's `protocol_options` (never empty here). Null with `*key`
  /// (the offending option) and `*err` when one is unknown or out of range. The default knows
  /// no options.
  virtual std::shared_ptr<ServerCodec> WithOptions(
      const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
    *key = options.begin()->first;
    *err = "protocol '" + std::string(Name()) + "' has no options";
    return nullptr;
  }
};

/// The client half of a protocol. Same threading rules as ServerCodec.
class ClientCodec : public FrameCodec {
 public:
  virtual std::string_view Name() const = 0;
  /// Appends the encoded request to `out`; body as in ServerCodec::EncodeResponse.
  virtual bool EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                             ChainBuffer* out) = 0;
  virtual bool DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) = 0;
};

/// Protocols register here by name ("trpc", later "http"); server and client look them up by the
/// `protocol` key of their config. Registration happens during static initialization; lookups
/// are safe from any thread afterwards.
class CodecRegistry {
 public:
  static CodecRegistry& Instance();
  void RegisterServer(std::string name, std::shared_ptr<ServerCodec> codec);
  void RegisterClient(std::string name, std::shared_ptr<ClientCodec> codec);
  std::shared_ptr<ServerCodec> GetServer(std::string_view name) const;
  std::shared_ptr<ClientCodec> GetClient(std::string_view name) const;
  /// The registered names, sorted (for "unknown protocol" messages).
  std::vector<std::string> ServerNames() const;
  std::vector<std::string> ClientNames() const;

 private:
  std::map<std::string, std::shared_ptr<ServerCodec>, std::less<>> server_;
  std::map<std::string, std::shared_ptr<ClientCodec>, std::less<>> client_;
};

}  // namespace trpc
