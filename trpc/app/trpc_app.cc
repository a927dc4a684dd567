#include "trpc/app/trpc_app.h"

#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstring>

#include "trpc/admin/admin.h"
#include "trpc/base/logging.h"
#include "trpc/runtime/runtime.h"

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
  sigset_t set = StopSignals();
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
  admin::EnableAdmin(server_.get());  // when server.admin_port asks for it
  if (int rc = Initialize(); rc != 0) {
    *err = config_.path + ": Initialize() failed with " + std::to_string(rc);
    StopAll();
    return false;
  }
  if (!client_->CheckFilters(err)) {
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
  sigset_t set = StopSignals();
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
  if (server_) server_->Stop();  // stop accepting; in-flight calls finish (bounded)
  if (runtime_started_) Destroy();
  if (client_) {
    client_->Stop();
    // Leave no dangling process client behind.
    if (GetTrpcClient() == client_.get()) SetTrpcClient(nullptr);
  }
  server_.reset();
  if (runtime_started_) runtime::Stop();
  runtime_started_ = false;
}

}  // namespace trpc
