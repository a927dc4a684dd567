#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trpc/base/latency_buckets.h"

namespace trpc {

/// One method of a service, as counted when its replies were sent.
struct MethodMetrics {
  /// The wire name ("/package.Service/Method"), an HTTP route ("GET /users/{id}"), or "unknown"
  /// for requests that matched no method (trpc ret 12; HTTP 404/405/415 answers).
  std::string name;
  uint64_t requests = 0;  // replies sent (= the histogram's count)
  /// Replies with an error, by code: the framework ret ("12", "31", ...), "func" for a
  /// handler's own code (ret 0, func_ret != 0), "other" for a ret without a slot of its own.
  /// Only codes seen, in a fixed order.
  std::vector<std::pair<std::string, uint64_t>> errors;
  /// Time from reading the request to sending its reply: non-cumulative counts per bucket of
  /// kLatencyBucketBoundsNs, the last one for what is above the last bound.
  std::array<uint64_t, kLatencyBuckets> latency_buckets{};
  uint64_t latency_sum_ns = 0;
  /// Requests routed to the method: answered, or still running (streams included).
  uint64_t started = 0;
  /// The same latencies by the protocol's own status code (gRPC's grpc-status), for the
  /// protocol's standard metric names; empty for protocols without one.
  LatencyByWireStatus by_wire_status;
};

/// One listening service.
struct ServiceMetrics {
  std::string name;
  std::string protocol;
  uint32_t connections = 0;  // open now
  uint64_t connections_accepted = 0;
  uint64_t connections_refused = 0;  // over max_conn_num
  uint64_t protocol_errors = 0;      // connections closed for bytes that did not parse
  uint64_t accept_backoffs = 0;      // pauses of accepting after accept() failed (out of fds)
  uint64_t bytes_in = 0;             // read from sockets
  uint64_t bytes_out = 0;            // written to sockets
  /// Requests refused without running their handler, by reason (docs/overload.md).
  uint64_t rejected_overload = 0;             // max_concurrency reached (ret 22)
  uint64_t rejected_parked_limit = 0;         // server.max_parked_requests reached (ret 22)
  uint64_t rejected_deadline_passed = 0;      // the deadline passed before the start (ret 21)
  uint64_t rejected_deadline_unmeetable = 0;  // too little time left to finish (ret 21)
  /// max_concurrency now (0 = no limit) and the requests it counts now.
  uint32_t concurrency_limit = 0;
  uint32_t concurrency_in_flight = 0;
  std::vector<MethodMetrics> methods;
};

/// One thread-model instance serving some of the services.
struct ThreadModelMetrics {
  std::string name;
  std::string type;  // "merge" or "fiber"
  size_t workers = 0;
  bool has_fibers = false;       // the fiber fields below mean something
  uint64_t fibers_alive = 0;     // started and not yet finished (running, runnable or parked)
  uint64_t run_queue_depth = 0;  // runnable, waiting for a worker
  uint64_t steals = 0;           // fibers a worker took from another one (counter)
  uint64_t remote_steals = 0;    // ... of those, from another scheduling group (counter)
  uint64_t stack_waits = 0;      // fibers put off for want of a stack (max_stacks; counter)
  uint64_t parks = 0;            // times a worker went to sleep (counter)
  uint64_t wakeups = 0;          // wake-up calls to parked workers (counter)
  uint64_t spin_ns = 0;          // time idle workers spent spinning for work (ns; counter)
  // Every model (its reactors, summed):
  uint64_t loop_wakeups = 0;          // eventfd writes waking a sleeping reactor (counter)
  uint64_t cross_thread_replies = 0;  // replies made off the connection's loop thread (counter)
};

/// The server's bound on buffered bytes (server.max_buffered_bytes).
struct BufferMetrics {
  uint64_t limit = 0;              // bytes
  int64_t buffered = 0;            // bytes now (lags by a batch per worker)
  uint64_t paused_total = 0;       // times a connection stopped reading for the bound
  uint64_t closed_over_limit = 0;  // connections closed for staying over it
  uint64_t memory_releases = 0;    // free memory returned to the system after a burst
};

/// The process's bound on parked work (server.max_parked_requests).
struct ParkedMetrics {
  uint64_t limit = 0;  // requests; 0 = no bound
  uint64_t taken = 0;  // permits out of the shared pool now: an upper bound of the parked requests
};

/// What Server::GetMetrics() returns: every service (the admin service last, if it runs) and
/// the thread models they run on.
struct ServerMetrics {
  std::string app;
  std::string server;
  BufferMetrics buffers;
  ParkedMetrics parked;
  std::vector<ServiceMetrics> services;
  std::vector<ThreadModelMetrics> thread_models;
};

}  // namespace trpc
