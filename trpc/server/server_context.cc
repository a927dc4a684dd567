#include "trpc/server/server_context.h"

#include <algorithm>

#include "trpc/base/clock.h"
#include "trpc/server/detail/server_call.h"
#include "trpc/transport/connection.h"

namespace trpc {

// The framework's part of a context lives in detail::ServerCall, which every context is.

const NetAddress& ServerContext::GetRemoteAddr() const {
  return detail::ServerCall::Of(*this).connection()->peer();
}

void ServerContext::SetResponse(bool framework_replies) {
  framework_replies_ = framework_replies;
  if (!framework_replies) detail::ServerCall::Of(*this).TakeOverReply();
}

void ServerContext::SendUnaryResponse(const Status& status,
                                      const google::protobuf::MessageLite& rsp) {
  detail::ServerCall::Of(*this).SendReply(status, &rsp);
}

void ServerContext::SendUnaryResponse(const Status& status) {
  detail::ServerCall::Of(*this).SendReply(status, nullptr);
}

int64_t ServerContext::GetRemainingTimeoutMs() const {
  if (deadline_ns_ == 0) return 0;
  int64_t left = deadline_ns_ - MonotonicNanos();
  return left <= 0 ? 0 : std::max<int64_t>(1, left / kNanosPerMilli);
}

void ServerContext::FreeLastRef(const ServerContext* p) {
  detail::ServerCall::Free(&detail::ServerCall::Of(*p));
}

}  // namespace trpc
