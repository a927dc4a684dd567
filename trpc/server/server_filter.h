#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trpc/base/filter.h"
#include "trpc/server/server_context.h"

namespace trpc {

/// A server-side filter: runs at the SERVER_* points it lists, on the thread serving the call.
/// To reject a call, set a status on the context (ctx->SetStatus(...)) and `status` to REJECT:
/// the call is answered with that status (ret 999 if the filter set none) and, before the
/// handler, the handler does not run. A filter is shared by every call of every service that
/// names it: operator() must be thread-safe.
class MessageServerFilter {
 public:
  virtual ~MessageServerFilter() = default;
  /// The name configs use (server.filter / server.service[].filter).
  virtual std::string Name() const = 0;
  virtual std::vector<FilterPoint> GetFilterPoint() = 0;
  virtual void operator()(FilterStatus& status, FilterPoint point,
                          const ServerContextPtr& context) = 0;
};

using MessageServerFilterPtr = std::shared_ptr<MessageServerFilter>;

/// Makes `filter` available to configs by its Name(). Call before the server starts. False if
/// that name is taken.
inline bool RegisterServerFilter(MessageServerFilterPtr filter) {
  return detail::FilterRegistry<MessageServerFilter>::Instance().Register(std::move(filter));
}

namespace detail {
using ServerFilterChain = FilterChain<MessageServerFilter, ServerContextPtr>;
}  // namespace detail

}  // namespace trpc
