#include "trpc/app/run_in_trpc_runtime.h"

#include <cstdio>
#include <memory>
#include <string>

#include "trpc/app/detail/naming_plugins.h"
#include "trpc/base/logging.h"
#include "trpc/client/trpc_client.h"
#include "trpc/runtime/detail/runtime.h"

namespace trpc {

int RunInTrpcRuntime(const Config& config, const std::function<int()>& fn) {
  log::Level level;
  if (log::ParseLevel(config.plugins.log.level, &level)) log::SetLevel(level);
  std::string err;
  if (!config.plugins.log.output.filename.empty() &&
      !log::SetOutput(config.plugins.log.output, &err)) {
    std::fprintf(stderr, "%s: plugins.log.default: %s\n", config.path.c_str(), err.c_str());
    return 1;
  }
  naming::RegisterNamingPlugins();
  auto client = std::make_shared<TrpcClient>(config.client);
  // Before anything starts: "file:line: ...".
  if (!naming::ConfigureNamingPlugins(config.plugins, &err) || !client->CheckProtocols(&err) ||
      !client->CheckNaming(&err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  if (!runtime::Start(config.global.threadmodel, &err)) {
    std::fprintf(stderr, "%s: %s\n", config.path.c_str(), err.c_str());
    return 1;
  }
  SetTrpcClient(client);
  int rc = runtime::GetThreadModel()->RunBlocking(fn);
  client->Stop();
  SetTrpcClient(nullptr);
  naming::StopNamingPlugins();
  runtime::Stop();
  log::ResetOutput();  // what the log writer still holds goes to the file
  return rc;
}

}  // namespace trpc
