#include "trpc/server/service.h"

#include <algorithm>
#include <vector>

#include "trpc/server/detail/server_call.h"
#include "trpc/server/server_context.h"

namespace trpc {

void Service::AddRpcServiceMethod(std::string func, std::unique_ptr<RpcMethodHandler> handler) {
  methods_[std::move(func)] = std::move(handler);
  // The map's nodes do not move, so the views stay valid; rebuilt whole because a name may
  // have been registered again with a new handler.
  small_table_.clear();
  if (methods_.size() <= kSmallTableMax) {
    for (const auto& [name, h] : methods_) small_table_.push_back({name, h.get()});
    // Unary methods first: a stream is looked up once per stream, a unary method per call.
    std::stable_partition(small_table_.begin(), small_table_.end(),
                          [](const MethodEntry& e) { return !e.handler->IsStream(); });
  }
}

RpcMethodHandler* Service::FindMethod(std::string_view func) const {
  if (!small_table_.empty()) {
    // Most names differ in length, so most entries cost one comparison; string_view's == checks
    // the size before it compares bytes.
    for (const MethodEntry& e : small_table_) {
      if (e.name == func) return e.handler;
    }
    return nullptr;
  }
  auto it = methods_.find(func);
  return it == methods_.end() ? nullptr : it->second.get();
}

RpcMethodHandler* Service::Route(ServerContext& ctx) const { return FindMethod(ctx.GetFuncName()); }

RpcRequest& Service::Request(ServerContext& ctx) { return detail::ServerCall::Of(ctx).request(); }

void Service::ForEachMethod(const MethodVisitor& fn) const {
  std::vector<const std::string*> names;
  for (const auto& [name, handler] : methods_) names.push_back(&name);
  std::sort(names.begin(), names.end(), [](auto* a, auto* b) { return *a < *b; });
  for (const std::string* name : names) fn(*name, methods_.find(*name)->second.get());
}

}  // namespace trpc
