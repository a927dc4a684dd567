#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trpc/base/filter.h"
#include "trpc/client/client_context.h"

namespace trpc {

/// A client-side filter: runs at the CLIENT_* points it lists, on the thread making or
/// completing the call. To reject a call, set a status on the context (ctx->SetStatus(...)) and
/// `status` to REJECT: the call fails with that status (ret 999 if the filter set none); before
/// sending, nothing is sent. A filter is shared by every call of every proxy that names it:
/// operator() must be thread-safe.
class MessageClientFilter {
 public:
  virtual ~MessageClientFilter() = default;
  /// The name configs use (client.filter / client.service[].filter).
  virtual std::string Name() const = 0;
  virtual std::vector<FilterPoint> GetFilterPoint() = 0;
  virtual void operator()(FilterStatus& status, FilterPoint point,
                          const ClientContextPtr& context) = 0;
};

using MessageClientFilterPtr = std::shared_ptr<MessageClientFilter>;

/// Makes `filter` available to configs by its Name(). Call before proxies that name it are
/// created. False if that name is taken.
inline bool RegisterClientFilter(MessageClientFilterPtr filter) {
  return detail::FilterRegistry<MessageClientFilter>::Instance().Register(std::move(filter));
}

namespace detail {
using ClientFilterChain = FilterChain<MessageClientFilter, ClientContextPtr>;
}  // namespace detail

}  // namespace trpc
