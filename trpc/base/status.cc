#include "trpc/base/status.h"

#include <fmt/format.h>

namespace trpc {

std::string_view RetCodeName(int32_t code) {
  switch (code) {
    case kSuccess:
      return "success";
    case kServerDecodeErr:
      return "server_decode";
    case kServerEncodeErr:
      return "server_encode";
    case kServerNoServiceErr:
      return "no_service";
    case kServerNoFuncErr:
      return "no_func";
    case kServerTimeoutErr:
      return "server_timeout";
    case kServerOverloadErr:
      return "server_overload";
    case kServerLimitedErr:
      return "server_limited";
    case kServerFullLinkTimeoutErr:
      return "server_full_link_timeout";
    case kServerSystemErr:
      return "server_system";
    case kServerAuthErr:
      return "auth";
    case kServerValidateErr:
      return "server_validate";
    case kClientInvokeTimeoutErr:
      return "invoke_timeout";
    case kClientFullLinkTimeoutErr:
      return "full_link_timeout";
    case kClientConnectErr:
      return "connect";
    case kClientEncodeErr:
      return "client_encode";
    case kClientDecodeErr:
      return "client_decode";
    case kClientLimitedErr:
      return "client_limited";
    case kClientOverloadErr:
      return "client_overload";
    case kClientRouterErr:
      return "router";
    case kClientNetworkErr:
      return "network";
    case kClientValidateErr:
      return "client_validate";
    case kClientCanceledErr:
      return "canceled";
    case kClientReadFrameErr:
      return "read_frame";
    default:
      return "unknown";
  }
}

bool IsFrameworkRetCode(int32_t ret) {
  // RetCodeName() names every code but kUnknownErr, whose name is "unknown" too.
  return ret == kUnknownErr || RetCodeName(ret) != "unknown";
}

std::string Status::ToString() const {
  if (OK()) return "OK";
  return fmt::format("ret: {} ({}), func_ret: {}, msg: {}", ret_, RetCodeName(ret_), func_ret_,
                     msg_);
}

}  // namespace trpc
