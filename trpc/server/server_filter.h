#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trpc/base/filter.h"
#include "trpc/server/server_context.h"

namespace trpc {

/// A server-side filter (MessageFilter, trpc/base/filter.h): runs at the SERVER_* points it
/// lists, on the thread serving the call. A REJECT answers the call with the context's status
/// (ret 999 if the filter set none) and, before the handler, the handler does not run.
using MessageServerFilter = MessageFilter<ServerContextPtr>;

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
