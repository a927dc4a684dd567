#pragma once

// Starting and stopping the runtime (the thread models a test's servers and proxies run on) from
// a test: from a YAML config for the suite or for one test, or the client-only runtime the tests
// of child servers call them from.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "test/common/thread_model_yaml.h"
#include "trpc/base/logging.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"

namespace trpc::testing {

/// Loads `yaml` (called `file` in its errors) into `*config` and starts the runtime with the
/// thread models of its `global` section; with `apply_log_level`, sets the log level that
/// `plugins.log.level` names first, as TrpcApp does. The caller calls runtime::Stop() once
/// whatever runs on the runtime (servers, proxies, clients) has stopped.
inline ::testing::AssertionResult StartRuntime(const std::string& yaml, const std::string& file,
                                               Config* config, bool apply_log_level = false) {
  std::string err;
  if (!LoadConfigFromString(yaml, file, config, &err)) {
    return ::testing::AssertionFailure() << "config: " << err;
  }
  log::Level level;
  if (apply_log_level && log::ParseLevel(config->plugins.log.level, &level)) log::SetLevel(level);
  if (!runtime::Start(config->global.threadmodel, &err)) {
    return ::testing::AssertionFailure() << "runtime: " << err;
  }
  return ::testing::AssertionSuccess();
}

/// The runtime for one test's scope: Start() as StartRuntime; the destructor stops it. Declare
/// it before the servers and proxies that run on it, so that they are gone before it stops,
/// even when an assertion returns early.
class ScopedRuntime {
 public:
  ScopedRuntime() = default;
  ~ScopedRuntime() { Stop(); }
  ScopedRuntime(const ScopedRuntime&) = delete;
  ScopedRuntime& operator=(const ScopedRuntime&) = delete;

  ::testing::AssertionResult Start(const std::string& yaml, const std::string& file, Config* config,
                                   bool apply_log_level = false) {
    ::testing::AssertionResult r = StartRuntime(yaml, file, config, apply_log_level);
    started_ = static_cast<bool>(r);
    return r;
  }
  void Stop() {
    if (started_) runtime::Stop();
    started_ = false;
  }

 private:
  bool started_ = false;
};

/// A suite whose tests call servers (usually child processes) as a client: the runtime with one
/// merge worker, "client" (so every call of a proxy with one connection goes out on it in the
/// order it was made), and the process's TrpcClient (GetTrpcClient()) for the whole suite.
class ClientRuntimeTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { StartClient(""); }
  static void TearDownTestSuite() {
    if (auto client = SetTrpcClient(nullptr)) client->Stop();
    runtime::Stop();
  }

  /// Starts the client runtime, with `client_yaml` as the client section's keys (each line
  /// indented by 2 spaces); for a suite whose SetUpTestSuite needs client keys.
  static void StartClient(const std::string& client_yaml) {
    Config config;
    ASSERT_TRUE(StartRuntime(ThreadModelYaml(/*fiber=*/false, {{"client", 1}}) +
                                 (client_yaml.empty() ? "" : "client:\n" + client_yaml),
                             "client.yaml", &config));
    SetTrpcClient(std::make_shared<TrpcClient>(config.client));
  }
};

}  // namespace trpc::testing
