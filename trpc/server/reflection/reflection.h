#pragma once

#include <string>

#include "trpc/server/server.h"

namespace trpc::reflection {

/// gRPC server reflection's method, in both of its versions (the same messages on the wire):
/// grpc.reflection.v1, and v1alpha, the only one grpc++ 1.51 and older tools speak.
inline constexpr char kReflectionV1Method[] =
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo";
inline constexpr char kReflectionV1AlphaMethod[] =
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

/// Adds server reflection, both versions, to every service of `server` served over gRPC or trpc
/// whose `reflection` key says so (unset: where the server has an admin service). A
/// bidirectional stream, so over trpc it is a trpc stream: a trpc-only server can be explored
/// too. It answers from the descriptors compiled into the program: the files that define the
/// services served on that port and the files they import, indexed when it is enabled (a
/// peer's names never reach protobuf's generated pool; other files stay private):
/// - list_services: the services whose methods this port serves, health and reflection
///   included;
/// - file_by_filename, file_containing_symbol, file_containing_extension: the file and the
///   files it imports, each once per stream (as grpc++ does);
/// - all_extension_numbers_of_type.
/// Health and reflection are described under their standard packages (grpc.health.v1, ...).
/// An unknown name gets an error_response with NOT_FOUND, and the stream goes on. Non-blocking:
/// either thread model serves it. Before server->Start(), after the services are registered;
/// TrpcApp calls it.
void EnableReflection(Server* server);

/// Whether reflection is on for `service` of `server` (its key, or the admin service's
/// presence).
bool ReflectionEnabled(const ServerConfig& server, const ServiceConfig& service);

}  // namespace trpc::reflection
