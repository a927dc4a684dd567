#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "trpc/base/cancel_signal.h"
#include "trpc/codec/rpc_message.h"

namespace trpc::grpc {

inline constexpr std::string_view kGrpcCodecName = "grpc";

// The gRPC protocol's parts of a request and a reply, shared by the codec and the protocol's
// server API (trpc/server/grpc). Header-only: the codec library is a plug-in nothing links to.

/// The gRPC part of a request a server received (RpcRequest::protocol), for handlers that need
/// more than the neutral fields (server/grpc/grpc_server.h reads it).
struct GrpcRequestInfo final : public ProtocolMessage {
  bool compressed = false;      // the message came compressed
  std::string encoding;         // grpc-encoding
  std::string accept_encoding;  // grpc-accept-encoding: what the reply may be compressed with
  std::string authority;
  /// Fires when the client cancels the call (RST_STREAM, e.g. its deadline passed) or the
  /// connection closes before the reply is sent.
  std::shared_ptr<CancelSignal> cancelled;
};

/// A gRPC handler's additions to its reply (RpcResponse::protocol_reply(); server/grpc sets
/// it): initial metadata, and the compression of the reply's message.
struct GrpcReplyOptions final : public ProtocolMessage {
  TransInfo initial_metadata;
  /// "gzip" or "deflate"; used only when the request's grpc-accept-encoding lists it.
  std::string compression;
};

}  // namespace trpc::grpc
