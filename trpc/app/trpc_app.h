#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "trpc/app/run_in_trpc_runtime.h"  // the client programs' entry, for one include
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/server/server.h"
#include "trpc/server/service.h"

namespace trpc {

/// The application entry (tRPC-Cpp's shape). Derive, register services in Initialize(), and
/// from main():
///
///   int main(int argc, char** argv) {
///     MyServer app;
///     if (int rc = app.Main(argc, argv); rc != 0) return rc;
///     app.Wait();
///   }
///
/// Main() parses `--config FILE`, loads and validates the YAML (a bad config stops start-up with
/// "file:line: what is wrong"), applies plugins.log, checks that every `client.service[]`
/// protocol is registered, starts the thread models, sets up the process's TrpcClient
/// (GetTrpcClient()) from `client:`, calls Initialize(), checks that every client filter the
/// config names is registered (TrpcClient::CheckFilters), then starts every
/// `server.service[]`. Wait() returns after SIGINT or SIGTERM (or Terminate()) once the app has
/// stopped gracefully: no new connections or requests, in-flight calls finish and their replies
/// go out (up to server.stop_max_wait_time), then Destroy(), the client and the thread models
/// stop. That stop is bounded (docs/config.md, "At stop_max_wait_time"): calls still in handlers
/// at the limit are answered with ret 31; if some were, the process exits (status 0) instead of
/// returning from Wait(), as it does when a merge worker is stuck in a handler. A watchdog ends
/// the process (status 1) 150 ms after the limit, and a second SIGINT/SIGTERM at once (128 +
/// the signal).
///
/// Thread contract: Main/Start/Wait from the main thread; Terminate from any thread.
class TrpcApp {
 public:
  TrpcApp() = default;
  virtual ~TrpcApp();
  TrpcApp(const TrpcApp&) = delete;
  TrpcApp& operator=(const TrpcApp&) = delete;

  /// 0 when serving; otherwise prints why to stderr and returns non-zero (2 for bad usage).
  int Main(int argc, char** argv);
  /// Main() without the command line: starts from a loaded config. Signals are not touched
  /// (tests stop with Terminate()).
  int Start(const Config& config);
  /// Blocks until a stop is asked for, then stops everything. Idempotent.
  void Wait();
  /// Asks Wait() to stop the app. Any thread, async-signal-unsafe.
  void Terminate();

  const Config& GetConfig() const { return config_; }
  Server* GetServer() { return server_.get(); }

 protected:
  /// Register services here (RegisterService) and set up what they need; non-zero aborts the
  /// start. Runs after the thread models and the client are up.
  virtual int Initialize() = 0;
  /// Runs after the server stopped, before the client and the thread models stop.
  virtual void Destroy() {}
  /// Binds `service` to the `server.service[]` entry called `name`.
  bool RegisterService(const std::string& name, ServicePtr service);

 private:
  bool StartFromConfig(std::string* err);
  void StopAll();

  Config config_;
  std::unique_ptr<Server> server_;
  std::shared_ptr<TrpcClient> client_;
  bool runtime_started_ = false;
  bool signals_blocked_ = false;
  bool stopped_ = false;
  std::mutex mu_;
  std::condition_variable cv_;
  bool terminate_ = false;  // guarded by mu_
};

}  // namespace trpc
