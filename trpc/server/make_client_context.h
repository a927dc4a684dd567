#pragma once

#include "trpc/client/client_context.h"
#include "trpc/client/service_proxy.h"
#include "trpc/server/server_context.h"

namespace trpc {

/// A context for a downstream call made while serving `server_ctx` (full-link timeout): the
/// call's deadline is the served request's deadline, so the time budget shrinks along the call
/// chain (the proxy's own timeout still applies when it is shorter); when nothing is left, the
/// call fails at once with ret 102 and is not sent. The request's trans_info is copied, and the
/// caller is the served service (the request's callee). The calls and streams made with it are
/// cancelled (ret 161) when the served call is (ServerContext::GetCancelSignal: its client
/// resets it or goes away). `proxy` is accepted for tRPC-Cpp's signature; it may be null.
inline ClientContextPtr MakeClientContext(const ServerContextPtr& server_ctx,
                                          const ServiceProxy* proxy = nullptr) {
  auto ctx = std::make_shared<ClientContext>();
  ctx->SetDeadlineNs(server_ctx->GetDeadlineNs());
  ctx->MutableReqTransInfo() = server_ctx->GetPbReqTransInfo();
  ctx->SetCaller(server_ctx->GetCallee());
  ctx->SetCancelSignal(server_ctx->GetCancelSignal());
  (void)proxy;
  return ctx;
}

template <typename Proxy>
ClientContextPtr MakeClientContext(const ServerContextPtr& server_ctx,
                                   const std::shared_ptr<Proxy>& proxy) {
  return MakeClientContext(server_ctx, static_cast<const ServiceProxy*>(proxy.get()));
}

}  // namespace trpc
