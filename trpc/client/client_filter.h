#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trpc/base/filter.h"
#include "trpc/client/client_context.h"

namespace trpc {

/// A client-side filter (MessageFilter, trpc/base/filter.h): runs at the CLIENT_* points it
/// lists, on the thread making or completing the call. A REJECT fails the call with the
/// context's status (ret 999 if the filter set none); before sending, nothing is sent.
using MessageClientFilter = MessageFilter<ClientContextPtr>;

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
