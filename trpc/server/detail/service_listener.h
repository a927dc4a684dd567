#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "trpc/codec/detail/codec.h"
#include "trpc/runtime/detail/thread_model.h"
#include "trpc/server/detail/service_counters.h"
#include "trpc/server/server_config.h"
#include "trpc/transport/acceptor.h"
#include "trpc/transport/buffer_budget.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// Listens on one service's address and owns the connections it accepts: spreads them over the
/// thread model's reactors (the service's connection policy: max_conn_num, timeouts, the buffer
/// budget) and keeps each reactor's table of them until they close.
///
/// Thread contract: set-up, Start and StopAccepting from the control thread. Each reactor's
/// connection table is touched only on that reactor's loop (or by a stop that holds the loop,
/// detail/in_flight.h). The counters are any thread's to read.
class ServiceListener {
 public:
  using ConnectionTable = std::unordered_map<Connection*, ConnectionPtr>;

  /// Connections decode with `codec` and report to `handler`; both must outlive them.
  ServiceListener(const ServiceConfig& config, ThreadModel* model, ServerCodec* codec,
                  Connection::Handler* handler, ServiceCounters* counters);
  ~ServiceListener();

  /// Counts the connections against `budget` (the server's bound on buffered bytes); before
  /// Start().
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget);
  /// A connection that sends nothing for `ms` is closed (0 = none); before Start().
  void SetSilentTimeout(int64_t ms) { conn_options_.silent_timeout_ms = ms; }
  /// At max_conn_num a new connection is taken, the least recently active one with no request
  /// in a handler closed to make room (counted as refused); only when every connection has one
  /// is the new one refused. One reactor only: the table it searches is the accepting thread's.
  void EvictIdleWhenFull();

  bool Start(std::string* err);
  bool started() const { return started_; }
  /// Closes the listening socket; connections keep being served. Blocks until done, or until
  /// `deadline_ns` (< 0: no limit) if the accepting worker is stuck in a handler (then the
  /// socket stays open, unserved).
  void StopAccepting(int64_t deadline_ns);

  /// The bound address (real port when the config asked for port 0).
  const NetAddress& address() const { return acceptor_->address(); }
  uint32_t connection_count() const { return conn_count_.load(std::memory_order_relaxed); }
  uint64_t accept_backoffs() const { return acceptor_->backoffs(); }

  /// A connection closed (its loop): it leaves the table and the count.
  void Forget(Connection* conn);
  /// Reactor `reactor`'s connections (its loop, or a stop holding it).
  const ConnectionTable& connections(size_t reactor) const { return conns_[reactor]; }
  /// Empties reactor `reactor`'s table and returns what it held (its loop).
  ConnectionTable TakeConnections(size_t reactor);

 private:
  void OnNewConnection(int fd, const NetAddress& peer);
  // EvictIdleWhenFull(): closes the least recently active connection without a request in a
  // handler; false when there is none. Accepting (and only) reactor.
  bool EvictLeastActive();

  const ServiceConfig& config_;
  ThreadModel* model_;
  ServerCodec* codec_;
  Connection::Handler* handler_;
  ServiceCounters* counters_;
  ConnectionOptions conn_options_;
  std::unique_ptr<Acceptor> acceptor_;
  Reactor* accept_reactor_;
  std::vector<ConnectionTable> conns_;  // per reactor
  std::atomic<uint32_t> conn_count_{0};
  std::shared_ptr<BufferBudget> budget_;           // null: no bound
  std::vector<BufferBudget::Slot*> budget_slots_;  // per reactor, when budget_ is set
  bool started_ = false;
  bool evict_when_full_ = false;
  bool accepting_stopped_ = false;
};

}  // namespace trpc::detail
