#pragma once

#include <functional>

#include "trpc/config/config.h"

namespace trpc {

/// The entry point of client programs (tRPC-Cpp's RunInTrpcRuntime): starts the thread models of
/// `config`, sets up GetTrpcClient() from its `client:` section, runs `fn`, then stops everything
/// and returns what `fn` returned. In the fiber model `fn` runs in a fiber, so its synchronous
/// calls park a fiber; in the merged model it runs on the calling thread. Returns 1 (and prints
/// why) if the runtime cannot start, or, before anything starts, if a `client.service[]` entry
/// names a protocol that is not registered ("file:line: client service 'x': unknown protocol
/// ..."). Client filters are checked when GetProxy() creates a proxy: `fn` may register them
/// first.
int RunInTrpcRuntime(const Config& config, const std::function<int()>& fn);

}  // namespace trpc
