#pragma once

#include <string>

#include "trpc/codec/grpc/grpc_message.h"
#include "trpc/server/server.h"
#include "trpc/server/server_context.h"

namespace trpc::grpc {

/// The gRPC plug-in's server API: what a handler of a service with `protocol: grpc` can see and
/// set beyond the neutral ServerContext. Each is a no-op (or null/false) on a request that did
/// not come over gRPC, so one implementation can serve trpc, HTTP and gRPC at once.

/// The request's gRPC part (compression, accepted encodings, authority), or null.
const GrpcRequestInfo* GetRequestInfo(const ServerContext& ctx);

/// True once the client has cancelled the call (reset its stream) or the call's deadline has
/// passed: a long handler may stop early; its reply is dropped (or, past the deadline, answered
/// DEADLINE_EXCEEDED). In the merge model a reset is read only when the worker is free, so there
/// a running handler sees the deadline, not the reset.
bool IsCancelled(const ServerContext& ctx);

/// Compresses the reply's message with `encoding` ("gzip" or "deflate") if the client accepts
/// it (grpc-accept-encoding); otherwise it is sent uncompressed. In a streaming call: every
/// message the handler writes, when called before the first write.
void SetResponseCompression(ServerContext* ctx, std::string encoding);

/// Sends `key: value` in the reply's initial metadata (headers); AddRspTransInfo() entries go
/// in the trailers. Keys ending in "-bin" carry bytes (base64 on the wire).
void AddInitialMetadata(ServerContext* ctx, std::string key, std::string value);

/// The standard health service's methods, as its clients call them.
inline constexpr char kHealthCheckMethod[] = "/grpc.health.v1.Health/Check";
inline constexpr char kHealthWatchMethod[] = "/grpc.health.v1.Health/Watch";

/// Adds grpc.health.v1.Health to every service of `server` configured with `protocol: grpc`
/// (their implementations must be registered). Before server->Start(); TrpcApp calls it.
/// - Check: SERVING while server->readiness() is kServing, NOT_SERVING before and while
///   stopping; for a named service, the same if this port serves it, else NOT_FOUND.
/// - Watch (server streaming): the same status at once, then again at every readiness change.
///   A named service not served here gets SERVICE_UNKNOWN and the call stays open. When the
///   server stops, the client gets NOT_SERVING, then the call ends with UNAVAILABLE (so a stop
///   does not wait for its watchers). Non-blocking: either thread model serves it.
void EnableHealth(Server* server);

}  // namespace trpc::grpc
