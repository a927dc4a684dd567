#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/detail/client_streams.h"
#include "trpc/codec/detail/server_streams.h"
#include "trpc/codec/rpc_message.h"
#include "trpc/transport/frame_codec.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

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
  /// A new stream session for one connection, made at its first stream frame: at most
  /// `max_streams` open at once, each reading with a window of `window` bytes. Null: the
  /// protocol has no streams of this kind.
  virtual std::unique_ptr<ServerStreamSession> NewStreamSession(uint32_t max_streams,
                                                                uint32_t window) {
    (void)max_streams;
    (void)window;
    return nullptr;
  }
  /// A codec for a service whose streaming methods are `stream_funcs` (their func names), for
  /// a protocol that must tell a streaming call from a unary one by its method before any
  /// message (gRPC); null (the default) when the protocol's frames say so themselves.
  /// `all_funcs`, when not null, is every func the service answers: the protocol may refuse
  /// any other at once.
  virtual std::shared_ptr<ServerCodec> WithStreamMethods(
      const std::vector<std::string>& stream_funcs, const std::vector<std::string>* all_funcs) {
    (void)stream_funcs;
    (void)all_funcs;
    return nullptr;
  }
  /// A codec set up with a service's `protocol_options` (never empty here). Null with `*key`
  /// (the offending option) and `*err` when one is unknown or out of range. The default knows
  /// no options.
  virtual std::shared_ptr<ServerCodec> WithOptions(
      const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
    *key = options.begin()->first;
    *err = "protocol '" + std::string(Name()) + "' has no options";
    return nullptr;
  }
  /// The protocol's own status code that a reply with framework code `ret` and handler code
  /// `func_ret` carries on the wire (gRPC: its grpc-status, 0..16), for the protocol's standard
  /// metric names; -1 (the default) for a protocol without one.
  virtual int WireStatus(int32_t ret, int32_t func_ret) const {
    (void)ret;
    (void)func_ret;
    return -1;
  }
  /// The name of wire status `status` as the protocol spells it (gRPC: "OK",
  /// "DEADLINE_EXCEEDED", ...), for metric labels; empty for a protocol without statuses.
  virtual std::string_view WireStatusName(int status) const {
    (void)status;
    return {};
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
  /// A new stream session for one client connection (at most `max_streams` open at once),
  /// whose per-connection codec state is `state` (null for a stateless protocol), or null for a
  /// protocol without streams of this kind.
  virtual std::unique_ptr<ClientStreamSession> NewClientStreamSession(uint32_t max_streams,
                                                                      FrameCodecState* state) {
    (void)max_streams;
    (void)state;
    return nullptr;
  }
  /// False for protocols without one-way calls (gRPC): a one-way call then fails at once.
  virtual bool SupportsOneway() const { return true; }
  /// As ServerCodec::WireStatus, for a call that ended with `ret` and `func_ret` (decoded from
  /// the reply, or the client's own failure: a timeout, a refused connection).
  virtual int WireStatus(int32_t ret, int32_t func_ret) const {
    (void)ret;
    (void)func_ret;
    return -1;
  }
  /// A codec set up with a client service's `protocol_options` (never empty here); as
  /// ServerCodec::WithOptions. The default knows no options.
  virtual std::shared_ptr<ClientCodec> WithOptions(
      const std::map<std::string, std::string>& options, std::string* key, std::string* err) {
    *key = options.begin()->first;
    *err = "protocol '" + std::string(Name()) + "' has no client options";
    return nullptr;
  }
};

/// Protocols register here by name ("trpc", "http"); server and client look them up by the
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
