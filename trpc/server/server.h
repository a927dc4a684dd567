#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/naming/registry.h"
#include "trpc/server/server_config.h"
#include "trpc/server/server_metrics.h"
#include "trpc/server/service.h"

namespace trpc {

class ThreadModel;
namespace detail {
class ServiceAdapter;
}

/// A server: the services of `server.service[]` in the config, each on its own address, run by
/// the thread model the config names. Register an implementation for every configured service
/// name, then Start().
///
/// Side services (AddSideService) run beside the configured ones, each on a one-thread merge
/// model of its own, so they answer while every worker of the configured services is busy: the
/// admin service (trpc/admin/admin.h) is one.
///
/// Thread contract: all methods from one control thread, except GetMetrics(). The runtime
/// (thread models) must be started before Start() and stopped after Stop().
/// A service served outside `server.service[]`, on a thread of its own (Server::AddSideService).
struct SideService {
  /// Name, protocol, address and limits; `threadmodel_instance_name` names the service's own
  /// one-thread model (in metrics), which no configured service can share.
  ServiceConfig config;
  ServicePtr service;
  /// Runs on the control thread before the service stops: ends work of its own that would
  /// outlive it. May be empty.
  std::function<void()> before_stop;
  /// A connection that sends nothing this long (ms) after it connects is closed; 0 = it is
  /// held until `config.idle_time`.
  uint32_t silent_timeout_ms = 0;
  /// At `config.max_conn_num`, a new connection closes the least recently active one that has
  /// no request in a handler (counted as refused) instead of being refused itself, so that a
  /// table full of idle or silent connections cannot lock a new client out.
  bool evict_idle_when_full = false;
};

class BufferBudget;

class Server {
 public:
  explicit Server(ServerConfig config);
  ~Server();

  /// Binds `service` to the configured service called `name`.
  bool RegisterService(const std::string& name, ServicePtr service);
  /// Starts every configured service. Fails (with "file:line: ..." of the service's config entry
  /// when known) if one has no implementation, names an unknown protocol or thread model, or
  /// cannot listen, or (at config().origin) if services are registered but none is configured,
  /// or the listen file (server.listen_file) cannot be written; then nothing is left listening.
  /// The listen file, if any, is written last, once every listener (side services included)
  /// is bound and the services are registered (detail/listen_file.h).
  bool Start(std::string* err);
  /// Stops accepting, lets in-flight calls finish and their replies go out, then closes all
  /// connections. Bounded by stop_max_wait_time: the calls still in handlers then are answered
  /// with kServerSystemErr ("server stopped before the handler finished") and their late
  /// replies dropped (docs/config.md). Removes the listen file once the listeners are closed.
  /// Idempotent. Must run before the runtime stops.
  void Stop();
  /// What the last Stop() met at its limit. `calls_cut`: calls answered with kServerSystemErr
  /// because their handlers had not finished. `workers_stuck`: workers that did not come back
  /// (merge workers stuck in a handler, taken over): their threads cannot be joined, so the
  /// runtime must not be stopped (a TrpcApp exits instead). A service that cut calls or left a
  /// worker stuck is never freed: its handlers may still return into it.
  struct StopOutcome {
    uint64_t calls_cut = 0;
    uint32_t workers_stuck = 0;
  };
  const StopOutcome& stop_outcome() const { return stop_outcome_; }

  /// The bound address of service `name` (useful with port 0). False if unknown.
  bool GetAddress(const std::string& name, NetAddress* out) const;
  const detail::ServiceAdapter* GetAdapter(const std::string& name) const;

  /// Serves `side` from Start() on, after the configured services, on a one-thread merge model
  /// of its own; Stop() stops it after them. Before Start(). False if a service of that name
  /// is already there.
  bool AddSideService(SideService side);
  bool HasSideService(const std::string& name) const;
  /// A snapshot of every service's counters and of the thread models they run on. Safe from
  /// any thread between Start() and Stop(); reads relaxed atomics only, so it neither waits for
  /// the workers nor orders anything (a snapshot, not a barrier).
  ServerMetrics GetMetrics() const;
  const ServerConfig& config() const { return config_; }
  /// The implementation registered for `name`, or null.
  ServicePtr GetService(const std::string& name) const;

  /// Whether the server takes calls, for health checks (grpc.health.v1, the admin /health):
  /// kStarting until Start() succeeds, kServing until Stop() begins, then kStopping. Any thread.
  enum class Readiness : uint8_t { kStarting, kServing, kStopping };
  Readiness readiness() const { return readiness_.load(std::memory_order_acquire); }
  /// Calls `fn` with the new readiness each time it changes (Start() succeeding, Stop()
  /// beginning), on the thread that changes it (the control thread), with no lock held.
  /// Returns the function that stops the calls: safe from any thread, from inside `fn`, and
  /// after the Server is gone (a stream's continuation may run after a stop freed it). `fn` may
  /// still run once after that returns, when a change was being announced meanwhile: what it
  /// captures must outlive that (a shared_ptr does). Any thread.
  std::function<void()> WatchReadiness(std::function<void(Readiness)> fn);

 private:
  bool StartServices(std::string* err);
  bool StartSideServices(std::string* err);
  // server.registry_name: registers every configured service; at a stop, deregisters them and
  // waits deregister_wait so that callers learn of it while the listeners still serve.
  bool RegisterInstances(std::string* err);
  void DeregisterInstances();
  // server.listen_file: every listener's bound address, once all listen.
  bool WriteListenFile(std::string* err);
  // "file:line: server.listen_file: <why>".
  std::string ListenFileError(const std::string& why) const;
  void StopSideServices();
  // Adds a stopped adapter's outcome to stop_outcome_; frees it unless it must be kept.
  void NoteStopped(std::unique_ptr<detail::ServiceAdapter> adapter);
  // Keeps `kept` allocated for the life of the process.
  template <typename T>
  static void Keep(std::unique_ptr<T> kept);

  ServerConfig config_;
  std::atomic<Readiness> readiness_{Readiness::kStarting};
  void SetReadiness(Readiness r);
  // The readiness watchers, shared with the unwatch functions handed out (they may outlive us).
  struct ReadinessWatchers {
    std::mutex mu;  // guards the two below
    std::map<uint64_t, std::shared_ptr<std::function<void(Readiness)>>> fns;
    uint64_t next = 1;
  };
  std::shared_ptr<ReadinessWatchers> readiness_watchers_ = std::make_shared<ReadinessWatchers>();
  // The bound on bytes buffered by every service's connections (server.max_buffered_bytes).
  std::shared_ptr<BufferBudget> budget_;
  std::map<std::string, ServicePtr> services_;
  std::map<std::string, std::unique_ptr<detail::ServiceAdapter>> adapters_;
  // Side services, each with its own one-thread merge model (not in the runtime's registry)
  // and adapter once started.
  struct RunningSide {
    SideService side;
    std::unique_ptr<ThreadModel> model;
    std::unique_ptr<detail::ServiceAdapter> adapter;
  };
  std::vector<RunningSide> sides_;
  StopOutcome stop_outcome_;
  std::shared_ptr<Registry> registry_;
  std::vector<RegistryInstance> registered_;
  bool listen_file_written_ = false;  // by this Start(): Stop() removes it
};

}  // namespace trpc
