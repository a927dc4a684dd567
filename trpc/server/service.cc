#include "trpc/server/service.h"

namespace trpc {

void Service::AddRpcServiceMethod(std::string func, std::unique_ptr<RpcMethodHandler> handler) {
  methods_[std::move(func)] = std::move(handler);
}

RpcMethodHandler* Service::FindMethod(std::string_view func) const {
  auto it = methods_.find(func);
  return it == methods_.end() ? nullptr : it->second.get();
}

}  // namespace trpc
