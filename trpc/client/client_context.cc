#include "trpc/client/client_context.h"

#include "trpc/naming/load_balancer.h"

namespace trpc {

void ClientContext::SetHashKey(std::string_view key) { SetHashKey(HashKey(key)); }

}  // namespace trpc
