#include "trpc/server/service.h"

#include "trpc/server/server_context.h"

namespace trpc {

void Service::AddRpcServiceMethod(std::string func, std::unique_ptr<RpcMethodHandler> handler) {
  methods_[std::move(func)] = std::move(handler);
}

RpcMethodHandler* Service::FindMethod(std::string_view func) const {
  auto it = methods_.find(func);
  return it == methods_.end() ? nullptr : it->second.get();
}

RpcMethodHandler* Service::Route(ServerContext& ctx) const { return FindMethod(ctx.GetFuncName()); }

}  // namespace trpc
