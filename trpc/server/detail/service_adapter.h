#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "trpc/base/clock.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/runtime/detail/thread_model.h"
#include "trpc/server/detail/bounded_stop.h"
#include "trpc/server/detail/request_path.h"
#include "trpc/server/detail/service_counters.h"
#include "trpc/server/detail/service_listener.h"
#include "trpc/server/detail/stream_path.h"
#include "trpc/server/server_config.h"
#include "trpc/server/server_filter.h"
#include "trpc/server/server_metrics.h"
#include "trpc/server/service.h"
#include "trpc/transport/buffer_budget.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// Binds one configured service to the network, out of four parts: its listener (the socket
/// and the connections), its request path (decode, admission, dispatch, the handler), its
/// bounded stop, and its counters. It is the connections' handler: frames go to the request
/// path, closes to the listener and the counters. Protocol-neutral: the codec comes from the
/// registry by name.
///
/// Thread contract: set-up, Start and Stop from the control thread. Connection callbacks run on
/// the connection's reactor. The counters are any thread's to read.
class ServiceAdapter final : public Connection::Handler {
 public:
  /// `filters` (may be empty, not null) must outlive every request context: the server keeps
  /// chains for the life of the process.
  ServiceAdapter(const ServiceConfig& config, ServicePtr service, ThreadModel* model,
                 std::shared_ptr<ServerCodec> codec, const ServerFilterChain* filters);
  ~ServiceAdapter() override;

  /// Counts this service's connections against `budget` (the server's bound on buffered
  /// bytes); before Start().
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
    listener_.SetBufferBudget(std::move(budget));
  }
  /// Admits requests against the process's bound on parked work (detail::ParkedWork,
  /// server.max_parked_requests); before Start(). Off for side services (admin): they must
  /// answer while the bound is reached.
  void SetParkedBound(bool on) { path_.SetParkedBound(on); }
  /// Side services' connection policy (Server::AddSideService), before Start(): a connection
  /// that sends nothing for `ms` is closed (ConnectionOptions::silent_timeout_ms; 0 = none).
  void SetSilentTimeout(int64_t ms) { listener_.SetSilentTimeout(ms); }
  /// ... and at max_conn_num a new connection is taken, the least recently active one with no
  /// request in a handler closed to make room (counted as refused); only when every connection
  /// has one is the new one refused. One reactor only (a side service's model).
  void EvictIdleWhenFull() { listener_.EvictIdleWhenFull(); }
  bool Start(std::string* err) { return listener_.Start(err); }
  /// Closes the listening socket; connections keep being served. Blocks until done, or until
  /// `deadline_ns` (MonotonicNanos(); < 0: no limit) if the accepting worker is stuck in a
  /// handler (then the socket stays open, unserved).
  void StopAccepting(int64_t deadline_ns = -1) { listener_.StopAccepting(deadline_ns); }
  /// Stops accepting, then closes every connection gracefully: no more requests are read,
  /// queued replies are written. At `grace_ms` the calls still in handlers are answered with
  /// kServerSystemErr and the connections closed (see StopBy). Blocks until done.
  void Stop(int64_t grace_ms = 3000) { StopBy(MonotonicNanos() + grace_ms * kNanosPerMilli); }
  /// Stop() with an absolute deadline (detail::BoundedStop::Run). False when some worker did
  /// not come back: its connections (and this adapter, which they call) must then outlive the
  /// process's stop, and its thread may never be joinable.
  bool StopBy(int64_t deadline_ns);
  /// Calls the last stop answered at its deadline, and workers it took over (or found stuck).
  uint64_t calls_cut() const { return stop_.calls_cut(); }
  uint32_t workers_stuck() const { return stop_.workers_stuck(); }
  /// Stream handlers that have not ended yet (a stop resets their streams; they end later).
  int64_t stream_handlers_running() const { return streams_.handlers_running(); }

  const ServiceConfig& config() const { return config_; }
  /// The bound address (real port when the config asked for port 0).
  const NetAddress& address() const { return listener_.address(); }
  /// Sums the counters (any thread; relaxed reads: a snapshot, not a barrier).
  ServiceStats stats() const;
  uint32_t connection_count() const { return listener_.connection_count(); }
  /// The service's connection, traffic and per-method counters, summed over the reactors. Any
  /// thread, even while every worker is busy: relaxed loads only (a snapshot, not a barrier).
  void CollectMetrics(ServiceMetrics* out) const;
  ThreadModel* model() const { return model_; }

  void OnFrame(Connection* conn, ChainBuffer&& frame) override;
  void OnClose(Connection* conn, const std::string& reason) override;

 private:
  ServiceConfig config_;
  ServicePtr service_;
  ThreadModel* model_;
  std::shared_ptr<ServerCodec> codec_;
  ServiceCounters counters_;
  RequestPath path_;
  StreamPath streams_;
  ServiceListener listener_;
  BoundedStop stop_;
  bool stopped_ = false;
};

}  // namespace trpc::detail
