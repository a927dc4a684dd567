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
    case kStreamServerNetworkErr:
      return "stream_server_network";
    case kStreamServerMsgExceedLimitErr:
      return "stream_server_msg_exceed_limit";
    case kStreamServerReadEnd:
      return "stream_server_read_end";
    case kStreamServerReadTimeoutErr:
      return "stream_server_read_timeout";
    case kStreamServerWriteEnd:
      return "stream_server_write_end";
    case kStreamClientNetworkErr:
      return "stream_client_network";
    case kStreamClientReadEnd:
      return "stream_client_read_end";
    case kStreamClientMsgExceedLimitErr:
      return "stream_client_msg_exceed_limit";
    case kStreamClientWriteEnd:
      return "stream_client_write_end";
    case kStreamClientReadTimeoutErr:
      return "stream_client_read_timeout";
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
  std::string out;
  if (ret_ != 0) {
    out = fmt::format("framework error {} ({})", ret_, RetCodeName(ret_));
    if (func_ret_ != 0) out += fmt::format(", application code {}", func_ret_);
  } else {
    // ret 0 with a func_ret: the handler's own error (Status::AppError), not the framework's.
    out = fmt::format("application error {}", func_ret_);
  }
  if (!msg_.empty()) out += fmt::format(": {}", msg_);
  return out;
}

}  // namespace trpc
