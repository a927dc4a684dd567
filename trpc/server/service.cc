#include "trpc/server/service.h"

#include <algorithm>
#include <vector>

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

void Service::ForEachMethod(const MethodVisitor& fn) const {
  std::vector<const std::string*> names;
  for (const auto& [name, handler] : methods_) names.push_back(&name);
  std::sort(names.begin(), names.end(), [](auto* a, auto* b) { return *a < *b; });
  for (const std::string* name : names) fn(*name, methods_.find(*name)->second.get());
}

}  // namespace trpc
