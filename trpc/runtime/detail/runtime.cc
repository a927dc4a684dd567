#include "trpc/runtime/detail/runtime.h"

#include <signal.h>

#include <mutex>
#include <vector>

#include "trpc/base/logging.h"
#include "trpc/runtime/detail/fiber_thread_model.h"
#include "trpc/runtime/detail/merge_thread_model.h"

namespace trpc::runtime {

namespace {
std::mutex g_mu;
std::vector<std::unique_ptr<ThreadModel>> g_models;  // guarded by g_mu for Start/Stop
}  // namespace

bool Start(const ThreadModelConfig& config, std::string* err) {
  std::lock_guard lock(g_mu);
  if (!g_models.empty()) return true;
  log::RouteProtobufLogs();
  // Sockets write with MSG_NOSIGNAL, but a write to a closed pipe (a dead log reader on stderr)
  // would still kill the process.
  signal(SIGPIPE, SIG_IGN);
  for (const auto& f : config.fiber) {
    g_models.push_back(std::make_unique<FiberThreadModel>(f));
  }
  for (const auto& m : config.merge) {
    g_models.push_back(std::make_unique<MergeThreadModel>(m.instance_name, m.io_thread_num));
  }
  if (g_models.empty())
    g_models.push_back(std::make_unique<MergeThreadModel>("default_instance", 1));
  for (auto& m : g_models) {
    if (!m->Start(err)) {
      for (auto& started : g_models) started->Stop();
      g_models.clear();
      return false;
    }
  }
  return true;
}

void Stop() {
  std::lock_guard lock(g_mu);
  for (auto& m : g_models) m->Stop();
  g_models.clear();
}

ThreadModel* GetThreadModel(std::string_view name) {
  for (auto& m : g_models) {
    if (name.empty() || m->InstanceName() == name) return m.get();
  }
  return nullptr;
}

}  // namespace trpc::runtime
