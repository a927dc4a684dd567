#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trpc/codec/codec.h"
#include "trpc/config/config.h"
#include "trpc/runtime/thread_model.h"
#include "trpc/server/server_context.h"
#include "trpc/server/server_filter.h"
#include "trpc/server/service.h"
#include "trpc/transport/acceptor.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// A snapshot of one listening service's counters.
struct ServiceStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t protocol_errors = 0;
  uint64_t requests = 0;
  uint64_t failed_requests = 0;
};

/// Binds one configured service to the network: listens on its address, spreads connections over
/// the thread model's reactors, decodes requests with the service's codec, runs the handlers and
/// sends the replies. Protocol-neutral: the codec comes from the registry by name.
///
/// Thread contract: Start/Stop from the control thread. Connection callbacks run on the
/// connection's reactor; each reactor's connection table is touched only by that reactor.
class ServiceAdapter final : public Connection::Handler {
 public:
  /// `filters` (may be empty, not null) must outlive every request context: the server keeps
  /// chains for the life of the process.
  ServiceAdapter(const ServiceConfig& config, ServicePtr service, ThreadModel* model,
                 std::shared_ptr<ServerCodec> codec, const ServerFilterChain* filters);
  ~ServiceAdapter() override;

  bool Start(std::string* err);
  /// Closes the listening socket; connections keep being served. Blocks until done.
  void StopAccepting();
  /// Stops accepting, then closes every connection gracefully: no more requests are read,
  /// queued replies are written, and connections still open after `grace_ms` are closed hard.
  /// Blocks until done.
  void Stop(int64_t grace_ms = 3000);

  const ServiceConfig& config() const { return config_; }
  /// The bound address (real port when the config asked for port 0).
  const NetAddress& address() const { return acceptor_->address(); }
  /// Sums the counters (any thread; relaxed reads: a snapshot, not a barrier).
  ServiceStats stats() const;
  uint32_t connection_count() const { return conn_count_.load(std::memory_order_relaxed); }

  void OnFrame(Connection* conn, ChainBuffer&& frame) override;
  void OnClose(Connection* conn, const std::string& reason) override;

 private:
  // Request counters per reactor, each on its own cache line: the merge model's workers never
  // write a line another worker writes. Relaxed atomics: statistics, read without ordering.
  struct alignas(64) ReactorCounters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> failed_requests{0};
  };

  void OnNewConnection(int fd, const NetAddress& peer);
  void HandleRequest(const ServerContextPtr& ctx, ReactorCounters& counters);
  void RunOnEveryReactor(const std::function<void(size_t)>& fn);

  ServiceConfig config_;
  ServicePtr service_;
  ThreadModel* model_;
  std::shared_ptr<ServerCodec> codec_;
  const ServerFilterChain* filters_;
  ConnectionOptions conn_options_;
  std::unique_ptr<Acceptor> acceptor_;
  Reactor* accept_reactor_;
  std::vector<std::unordered_map<Connection*, ConnectionPtr>> conns_;  // per reactor
  std::atomic<uint32_t> conn_count_{0};
  std::vector<ReactorCounters> counters_;
  // Written by the accepting thread or on close; rare, so shared.
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> connections_refused_{0};
  std::atomic<uint64_t> protocol_errors_{0};
  bool started_ = false;
  bool accepting_stopped_ = false;
};

}  // namespace trpc::detail
