#include "trpc/codec/grpc/detail/grpc_status.h"

#include "trpc/base/status.h"

namespace trpc::grpc {

int GrpcCodeOf(int32_t ret, int32_t func_ret) {
  switch (ret) {
    case kSuccess:
      if (func_ret == 0) return kGrpcOk;
      return func_ret >= 1 && func_ret <= 16 ? func_ret : kGrpcUnknown;
    case kServerDecodeErr:
    case kServerEncodeErr:
    case kServerSystemErr:
    case kClientEncodeErr:
    case kClientDecodeErr:
      return kGrpcInternal;
    case kServerNoServiceErr:
    case kServerNoFuncErr:
      return kGrpcUnimplemented;
    case kServerTimeoutErr:
    case kServerFullLinkTimeoutErr:
    case kClientInvokeTimeoutErr:
    case kClientFullLinkTimeoutErr:
      return kGrpcDeadlineExceeded;
    case kServerOverloadErr:
    case kServerLimitedErr:
    case kClientLimitedErr:
    case kClientOverloadErr:
      return kGrpcResourceExhausted;
    case kServerAuthErr:
      return kGrpcUnauthenticated;
    case kServerValidateErr:
    case kClientValidateErr:
      return kGrpcInvalidArgument;
    case kClientConnectErr:
    case kClientNetworkErr:
    case kClientRouterErr:
    case kClientReadFrameErr:
      return kGrpcUnavailable;
    case kClientCanceledErr:
      return kGrpcCancelled;
    default:
      return kGrpcUnknown;
  }
}

void FromGrpcCode(int code, int32_t* ret, int32_t* func_ret) {
  *ret = 0;
  *func_ret = 0;
  switch (code) {
    case kGrpcOk:
      return;
    case kGrpcCancelled:
      *ret = kClientCanceledErr;
      return;
    case kGrpcDeadlineExceeded:
      *ret = kClientInvokeTimeoutErr;
      return;
    case kGrpcResourceExhausted:
      *ret = kServerOverloadErr;
      return;
    case kGrpcUnimplemented:
      *ret = kServerNoFuncErr;
      return;
    case kGrpcInternal:
      *ret = kServerSystemErr;
      return;
    case kGrpcUnavailable:
      *ret = kClientNetworkErr;
      return;
    case kGrpcUnauthenticated:
      *ret = kServerAuthErr;
      return;
    default:
      *func_ret = code >= 1 && code <= 16 ? code : kGrpcUnknown;
      return;
  }
}

const char* GrpcCodeName(int code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  return code >= 0 && code <= 16 ? kNames[code] : "UNKNOWN";
}

int GrpcCodeOfHttpStatus(int http_status) {
  switch (http_status) {
    case 400:
      return kGrpcInternal;
    case 401:
      return kGrpcUnauthenticated;
    case 403:
      return kGrpcPermissionDenied;
    case 404:
      return kGrpcUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return kGrpcUnavailable;
    default:
      return kGrpcUnknown;
  }
}

}  // namespace trpc::grpc
