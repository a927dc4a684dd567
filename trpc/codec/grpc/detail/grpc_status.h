#pragma once

#include <cstdint>

namespace trpc::grpc {

/// gRPC status codes (the grpc-status trailer).
enum GrpcCode : int {
  kGrpcOk = 0,
  kGrpcCancelled = 1,
  kGrpcUnknown = 2,
  kGrpcInvalidArgument = 3,
  kGrpcDeadlineExceeded = 4,
  kGrpcNotFound = 5,
  kGrpcAlreadyExists = 6,
  kGrpcPermissionDenied = 7,
  kGrpcResourceExhausted = 8,
  kGrpcFailedPrecondition = 9,
  kGrpcAborted = 10,
  kGrpcOutOfRange = 11,
  kGrpcUnimplemented = 12,
  kGrpcInternal = 13,
  kGrpcUnavailable = 14,
  kGrpcDataLoss = 15,
  kGrpcUnauthenticated = 16,
};

/// The gRPC code a reply with framework code `ret` and handler code `func_ret` is sent with
/// (the table in docs/grpc.md): framework codes map by meaning; a handler's own code 1..16 is
/// sent as that gRPC code, any other as UNKNOWN.
int GrpcCodeOf(int32_t ret, int32_t func_ret);

/// The reverse, for a gRPC code received: framework codes for the codes that have one
/// (DEADLINE_EXCEEDED, UNIMPLEMENTED, RESOURCE_EXHAUSTED, UNAVAILABLE, ...), else the code as
/// the handler's own (`*func_ret`, with `*ret` 0).
void FromGrpcCode(int code, int32_t* ret, int32_t* func_ret);

/// The code's name as gRPC spells it ("OK", "DEADLINE_EXCEEDED", ...); "UNKNOWN" for a code
/// outside 0..16.
const char* GrpcCodeName(int code);

/// The gRPC code of an HTTP status that came without grpc-status (gRPC's HTTP-to-gRPC table).
int GrpcCodeOfHttpStatus(int http_status);

}  // namespace trpc::grpc
