#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/codec/codec.h"
#include "trpc/runtime/thread_model.h"
#include "trpc/server/detail/concurrency_limiter.h"
#include "trpc/server/detail/in_flight.h"
#include "trpc/server/detail/method_counters.h"
#include "trpc/server/server_config.h"
#include "trpc/server/server_context.h"
#include "trpc/server/server_filter.h"
#include "trpc/server/server_metrics.h"
#include "trpc/server/service.h"
#include "trpc/transport/acceptor.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// A snapshot of one listening service's counters.
struct ServiceStats {
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;
  uint64_t protocol_errors = 0;
  uint64_t accept_backoffs = 0;  // accept() failed (e.g. out of fds): paused
  uint64_t requests = 0;
  uint64_t failed_requests = 0;
  uint64_t rejected_overload = 0;
  uint64_t rejected_parked_limit = 0;
  uint64_t rejected_deadline_passed = 0;
  uint64_t rejected_deadline_unmeetable = 0;
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

  /// Counts this service's connections against `budget` (the server's bound on buffered
  /// bytes); before Start().
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget);
  /// Admits requests against the process's bound on parked work (detail::ParkedWork,
  /// server.max_parked_requests); before Start(). Off for side services (admin): they must
  /// answer while the bound is reached.
  void SetParkedBound(bool on) { parked_bound_ = on; }
  /// Side services' connection policy (Server::AddSideService), before Start(): a connection
  /// that sends nothing for `ms` is closed (ConnectionOptions::silent_timeout_ms; 0 = none).
  void SetSilentTimeout(int64_t ms) { conn_options_.silent_timeout_ms = ms; }
  /// ... and at max_conn_num a new connection is taken, the least recently active one with no
  /// request in a handler closed to make room (counted as refused); only when every connection
  /// has one is the new one refused. One reactor only (a side service's model): the table it
  /// searches is the accepting thread's own.
  void EvictIdleWhenFull();
  bool Start(std::string* err);
  /// Closes the listening socket; connections keep being served. Blocks until done, or until
  /// `deadline_ns` (MonotonicNanos(); < 0: no limit) if the accepting worker is stuck in a
  /// handler (then the socket stays open, unserved).
  void StopAccepting(int64_t deadline_ns = -1);
  /// Stops accepting, then closes every connection gracefully: no more requests are read,
  /// queued replies are written. At `grace_ms` the calls still in handlers are answered with
  /// kServerSystemErr and the connections closed (see StopBy). Blocks until done.
  void Stop(int64_t grace_ms = 3000) { StopBy(MonotonicNanos() + grace_ms * kNanosPerMilli); }
  /// Stop() with an absolute deadline. At it, each worker answers its connections' calls still
  /// in handlers (kServerSystemErr, "server stopped before the handler finished") and closes
  /// them. A merge worker that does not come back within a few ms because it is stuck in a
  /// handler is taken over (detail/in_flight.h): this thread answers its calls, writes what
  /// its connections have queued and shuts their sockets down, while the worker waits. False
  /// when some worker did not come back: its connections (and this adapter, which they call)
  /// must then outlive the process's stop, and its thread may never be joinable.
  bool StopBy(int64_t deadline_ns);
  /// Calls the last stop answered at its deadline, and workers it took over (or found stuck).
  uint64_t calls_cut() const { return calls_cut_.load(std::memory_order_relaxed); }
  uint32_t workers_stuck() const { return workers_stuck_; }

  const ServiceConfig& config() const { return config_; }
  /// The bound address (real port when the config asked for port 0).
  const NetAddress& address() const { return acceptor_->address(); }
  /// Sums the counters (any thread; relaxed reads: a snapshot, not a barrier).
  ServiceStats stats() const;
  uint32_t connection_count() const { return conn_count_.load(std::memory_order_relaxed); }
  /// The service's connection, traffic and per-method counters, summed over the reactors. Any
  /// thread, even while every worker is busy: relaxed loads only (a snapshot, not a barrier).
  void CollectMetrics(ServiceMetrics* out) const;
  ThreadModel* model() const { return model_; }

  void OnFrame(Connection* conn, ChainBuffer&& frame) override;
  void OnClose(Connection* conn, const std::string& reason) override;

 private:
  // Request counters per reactor, each on its own cache line: the merge model's workers never
  // write a line another worker writes. Relaxed atomics: statistics, read without ordering.
  struct alignas(64) ReactorCounters {
    std::atomic<uint64_t> requests{0};
    std::atomic<uint64_t> failed_requests{0};
    // Requests refused without running their handler, by reason.
    std::atomic<uint64_t> rejected_overload{0};
    std::atomic<uint64_t> rejected_parked_limit{0};
    std::atomic<uint64_t> rejected_deadline_passed{0};
    std::atomic<uint64_t> rejected_deadline_unmeetable{0};
  };

  void OnNewConnection(int fd, const NetAddress& peer);
  // EvictIdleWhenFull(): closes the least recently active connection without a request in a
  // handler; false when there is none. Accepting (and only) reactor.
  bool EvictLeastActive();
  // Where the thread model runs a submitted request (ServerContext::Run).
  friend class trpc::ServerContext;
  void RunSubmitted(const ServerContextPtr& ctx);
  // The index of a connection's reactor in the thread model.
  size_t ReactorIndex(const Connection* conn) const {
    return static_cast<size_t>(model_->IndexOf(conn->reactor()));
  }
  // `now_ns`: a recent clock reading to check the deadline against, or 0 to read the clock.
  void HandleRequest(const ServerContextPtr& ctx, RpcMethodHandler* method,
                     ReactorCounters& counters, int64_t now_ns);
  void BuildMethodTable();
  // The counters of `method` (null or not ours: "unknown") on reactor `reactor`.
  MethodCounters* CountersOf(size_t reactor, const RpcMethodHandler* method) const {
    uint32_t id = method != nullptr ? method->id() - first_handler_id_ : UINT32_MAX;
    size_t slot = id < slot_of_handler_.size() ? slot_of_handler_[id] : 0;
    return &method_counters_[reactor * method_names_.size() + slot];
  }
  // Runs fn(i) on the loop of each reactor i in `which` and waits until they ran or
  // `deadline_ns` (< 0: no limit); one that has not started by then never runs it. Returns
  // which ran.
  std::vector<bool> RunOnReactorsUntil(const std::vector<size_t>& which,
                                       const std::function<void(size_t)>& fn, int64_t deadline_ns);
  // The stop's deadline, on reactor i's loop: answers the calls still in handlers, closes.
  void CutAndClose(size_t i);
  // The same for a reactor whose loop did not come back (control thread); false if it could
  // not be taken over by `until_ns` (the worker is not in a handler).
  bool TakeOver(size_t i, int64_t until_ns);
  // Answers this service's calls in `calls` (and, in a takeover, the one in its slot).
  void AnswerCalls(detail::InFlightCalls* calls, bool takeover);

  ServiceConfig config_;
  ServicePtr service_;
  ThreadModel* model_;
  std::shared_ptr<ServerCodec> codec_;
  const ServerFilterChain* filters_;
  ConnectionOptions conn_options_;
  // max_concurrency (null: no limit).
  std::unique_ptr<ConcurrencyLimiter> limiter_;
  std::unique_ptr<Acceptor> acceptor_;
  Reactor* accept_reactor_;
  std::vector<std::unordered_map<Connection*, ConnectionPtr>> conns_;  // per reactor
  std::atomic<uint32_t> conn_count_{0};
  std::vector<ReactorCounters> counters_;
  // Per-method statistics. Slot 0 is "unknown" (no method matched); the others are the
  // service's methods (Service::ForEachMethod), found from a handler by its id: the id minus
  // the smallest id among them indexes slot_of_handler_ (0 where no method has that id).
  // method_counters_ holds ReactorCount() x method_names_.size() entries, reactor-major, and
  // lives as long as the process: a reply sent after Stop() gave up waiting still records.
  std::vector<std::string> method_names_;
  uint32_t first_handler_id_ = 0;
  std::vector<uint32_t> slot_of_handler_;
  MethodCounters* method_counters_ = nullptr;
  std::vector<TrafficCounters> traffic_;           // per reactor; connections add their bytes
  std::shared_ptr<BufferBudget> budget_;           // null: no bound
  std::vector<BufferBudget::Slot*> budget_slots_;  // per reactor, when budget_ is set
  // Written by the accepting thread or on close; rare, so shared.
  std::atomic<uint64_t> connections_accepted_{0};
  std::atomic<uint64_t> connections_refused_{0};
  std::atomic<uint64_t> protocol_errors_{0};
  bool parked_bound_ = false;
  bool started_ = false;
  bool evict_when_full_ = false;
  bool accepting_stopped_ = false;
  std::atomic<uint64_t> calls_cut_{0};
  uint32_t workers_stuck_ = 0;
};

}  // namespace trpc::detail
