#include "trpc/app/trpc_app.h"

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "trpc/admin/admin.h"
#include "trpc/app/detail/naming_plugins.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/reflection/reflection.h"
#include "trpc/tracing/tracing.h"
#include "trpc/transport/tls_context.h"

namespace trpc {

namespace {
void PrintUsage(const char* argv0) { std::fprintf(stderr, "usage: %s --config FILE\n", argv0); }

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

// What Main() blocks and Wait() takes: the stop signals, and SIGHUP, which reloads the TLS
// certificates (docs/tls.md) instead of ending the process as its default action would.
sigset_t WaitedSignals() {
  sigset_t set = StopSignals();
  sigaddset(&set, SIGHUP);
  return set;
}

// The whole stop (server, Destroy(), client, thread models) gets stop_max_wait_time plus this
// before the watchdog ends the process.
constexpr int64_t kStopWatchdogMarginMs = 150;

// Ends the process now: no destructors, no atexit handlers (other threads may be inside the
// objects they would destroy). Log lines are written whole when logged; stdio is flushed.
[[noreturn]] void ExitNow(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  _exit(status);
}

// Runs while a signal-started stop is under way: a second SIGINT/SIGTERM ends the process at
// once (128 + the signal), and so does the stop running past `deadline_ns` (status 1). The
// stop signals are blocked in every thread (Main), so sigtimedwait() here receives them.
void StopWatchdog(int64_t deadline_ns, int64_t limit_ms, const std::atomic<bool>* done) {
  sigset_t set = StopSignals();
  while (!done->load(std::memory_order_acquire)) {
    int64_t left = deadline_ns - MonotonicNanos();
    if (left <= 0) {
      TRPC_LOG_ERROR(
          "the stop has not finished {} ms after it began (server.stop_max_wait_time {} ms + {} "
          "ms): exiting now",
          limit_ms + kStopWatchdogMarginMs, limit_ms, kStopWatchdogMarginMs);
      ExitNow(1);
    }
    // Wakes every 10 ms at most to see whether the stop is done.
    int64_t wait = std::min<int64_t>(left, 10 * kNanosPerMilli);
    timespec timeout{static_cast<time_t>(wait / 1'000'000'000),
                     static_cast<long>(wait % 1'000'000'000)};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig > 0) {
      TRPC_LOG_ERROR("signal {} ({}) during the stop: exiting at once with status {}", sig,
                     strsignal(sig), 128 + sig);
      ExitNow(128 + sig);
    }
  }
}
}  // namespace

TrpcApp::~TrpcApp() { StopAll(); }

int TrpcApp::Main(int argc, char** argv) {
  std::string path;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      path = argv[++i];
    } else if (arg.starts_with("--config=")) {
      path = std::string(arg.substr(9));
    } else if (arg == "-h" || arg == "--help") {
      PrintUsage(argv[0]);
      return 2;
    } else {
      std::fprintf(stderr, "%s: unknown argument '%s'\n", argv[0], argv[i]);
      PrintUsage(argv[0]);
      return 2;
    }
  }
  if (path.empty()) {
    PrintUsage(argv[0]);
    return 2;
  }
  std::string err;
  if (!LoadConfig(path, &config_, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  // Blocked before any thread starts, so every thread inherits the mask and only Wait()'s
  // sigtimedwait() receives them.
  sigset_t set = WaitedSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signals_blocked_ = true;
  if (!StartFromConfig(&err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return 0;
}

int TrpcApp::Start(const Config& config) {
  config_ = config;
  std::string err;
  if (!StartFromConfig(&err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return 0;
}

bool TrpcApp::StartFromConfig(std::string* err) {
  log::Level level;
  if (log::ParseLevel(config_.plugins.log.level, &level)) log::SetLevel(level);
  if (!config_.plugins.log.output.filename.empty() &&
      !log::SetOutput(config_.plugins.log.output, err)) {
    *err = config_.path + ": plugins.log.default: " + *err;
    return false;
  }
  naming::RegisterNamingPlugins();
  if (!naming::ConfigureNamingPlugins(config_.plugins, err)) return false;
  // The `tracing` filters are always there to be named; plugins.tracing turns the spans on.
  tracing::RegisterTracingFilters();
  if (config_.plugins.tracing.enabled) {
    const ServerConfig& sc = config_.server;
    std::string service =
        sc.app.empty() || sc.server.empty() ? sc.app + sc.server : sc.app + "." + sc.server;
    if (!tracing::StartTracing(config_.plugins.tracing, service.empty() ? "trpc" : service, err)) {
      return false;
    }
  }
  client_ = std::make_shared<TrpcClient>(config_.client);
  // The client's protocols are registered from static initialization on, so a typo stops
  // start-up before anything runs; its filters are checked once Initialize() registered them.
  if (!client_->CheckProtocols(err)) return false;
  if (!runtime::Start(config_.global.threadmodel, err)) {
    *err = config_.path + ": " + *err;
    return false;
  }
  runtime_started_ = true;
  SetTrpcClient(client_);
  ServerConfig server_config = config_.server;
  // A file without a server section: errors about it (services registered but none
  // configured) point at the file.
  if (server_config.origin.empty() && !config_.path.empty()) {
    server_config.origin = config_.path + ":1";
  }
  server_ = std::make_unique<Server>(std::move(server_config));
  if (!admin::EnableAdmin(server_.get(), err)) {  // when server.admin_port asks for it
    StopAll();
    return false;
  }
  if (int rc = Initialize(); rc != 0) {
    *err = config_.path + ": Initialize() failed with " + std::to_string(rc);
    StopAll();
    return false;
  }
  grpc::EnableHealth(server_.get());  // grpc.health.v1 on every gRPC service
  // Server reflection where the config asks for it (after health: it lists it).
  reflection::EnableReflection(server_.get());
  if (!client_->CheckFilters(err) || !client_->CheckNaming(err)) {
    StopAll();
    return false;
  }
  if (!server_->Start(err)) {
    StopAll();
    return false;
  }
  TRPC_LOG_INFO("{} started ({} services)",
                config_.server.server.empty() ? "server" : config_.server.server,
                config_.server.service.size());
  return true;
}

bool TrpcApp::RegisterService(const std::string& name, ServicePtr service) {
  return server_ != nullptr && server_->RegisterService(name, std::move(service));
}

void TrpcApp::Terminate() {
  std::lock_guard lock(mu_);
  terminate_ = true;
  cv_.notify_all();
}

void TrpcApp::Wait() {
  sigset_t set = WaitedSignals();
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (terminate_) break;
      if (!signals_blocked_) {
        cv_.wait(lock, [this] { return terminate_; });
        break;
      }
    }
    // Signals are blocked: poll for one, and for Terminate(), every 100 ms.
    timespec timeout{0, 100 * 1000 * 1000};
    int sig = sigtimedwait(&set, nullptr, &timeout);
    if (sig == SIGHUP) {
      // New certificates for new connections; established ones keep theirs. A bad file keeps
      // the old certificate (logged and counted by the reload).
      size_t contexts = TlsContext::All().size();
      size_t failed = TlsContext::ReloadAll();
      TRPC_LOG_INFO("SIGHUP: TLS certificates reloaded ({} of {} failed)", failed, contexts);
      continue;
    }
    if (sig > 0) {
      TRPC_LOG_INFO("signal {} ({}): stopping", sig, strsignal(sig));
      break;
    }
  }
  StopAll();
}

void TrpcApp::StopAll() {
  if (stopped_) return;
  stopped_ = true;
  // Only a stop started by a signal (Main) is bounded for the process as a whole: a program
  // that drives the app itself (Start/Terminate, tests) is never ended from here.
  std::atomic<bool> stop_done{false};
  std::thread watchdog;
  // A registered server first waits deregister_wait for its callers to learn it is leaving.
  int64_t limit_ms = config_.server.stop_max_wait_time +
                     (config_.server.registry_name.empty() ? 0 : config_.server.deregister_wait);
  if (signals_blocked_) {
    int64_t deadline = MonotonicNanos() + (limit_ms + kStopWatchdogMarginMs) * kNanosPerMilli;
    watchdog = std::thread(StopWatchdog, deadline, limit_ms, &stop_done);
  }
  Server::StopOutcome outcome;
  if (server_) {
    server_->Stop();  // stop accepting; in-flight calls finish (bounded)
    outcome = server_->stop_outcome();
  }
  if (outcome.workers_stuck > 0) {
    // A merge worker is stuck in a handler: its thread cannot be joined, and the client and
    // thread models cannot be stopped under it.
    TRPC_LOG_ERROR("{} worker(s) stuck in handlers at the stop's limit: {}", outcome.workers_stuck,
                   signals_blocked_ ? "exiting without stopping the thread models"
                                    : "the thread models are left running");
    if (signals_blocked_) ExitNow(0);
    return;
  }
  if (runtime_started_) Destroy();
  if (client_) {
    client_->Stop();
    // Leave no dangling process client behind.
    if (GetTrpcClient() == client_.get()) SetTrpcClient(nullptr);
  }
  server_.reset();
  // The spans of the calls that ended go out (each export bounded by export_timeout).
  tracing::StopTracing();
  naming::StopNamingPlugins();  // after the client and server, which used them
  if (runtime_started_) runtime::Stop();
  runtime_started_ = false;
  if (watchdog.joinable()) {
    stop_done.store(true, std::memory_order_release);
    watchdog.join();
  }
  log::ResetOutput();  // what the log writer still holds goes to the file
  if (outcome.calls_cut > 0 && signals_blocked_) {
    // Handlers the stop gave up on still hold their fibers' memory (and whatever they
    // reference): exit without the static destructors and leak checks that would trip on them.
    TRPC_LOG_INFO("stopped; {} calls were answered at stop_max_wait_time", outcome.calls_cut);
    ExitNow(0);
  }
}

}  // namespace trpc
