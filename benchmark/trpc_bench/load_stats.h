#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "trpc/base/detail/histogram.h"

namespace trpc::bench {

/// What one worker thread measured, in microseconds. Only measured calls (intended send time
/// inside the window, past the warm-up) are recorded. Tagged (tail) calls are kept out of
/// `latency`/`uncorrected` by their tag, never by their latency.
///
/// Thread contract: written by its worker only; read or merged after the worker has finished
/// (or, for a progress snapshot, on the worker's own thread).
struct LoadStats {
  Histogram latency;        // untagged successful calls, from the intended send time
  Histogram uncorrected;    // the same calls from the actual send time (open loop only)
  Histogram tail;           // tagged successful calls, from the intended send time
  Histogram error_latency;  // failed calls of any kind, from the intended send time
  Histogram lateness;       // actual minus intended send time (open loop only)
  // Failed calls by code: framework ret codes ("101" is a client timeout), and "func_ret:N"
  // for a handler's own non-zero code.
  std::map<std::string, uint64_t> errors;
  uint64_t requests = 0;  // completed, ok or not (expired ones included)
  uint64_t ok = 0;
  // OK replies within the caller's deadline (--timeout) from the intended send time, and the
  // OK replies after it: good + late == ok.
  uint64_t good = 0;
  uint64_t late = 0;
  uint64_t timeouts = 0;       // errors["101"]: the call's timer, or expired before it was sent
  uint64_t expired = 0;        // open loop: the deadline passed before a connection was free
  uint64_t tail_requests = 0;  // tagged, completed, ok or not
  uint64_t hot_requests = 0;   // on the hot connection (--hot-share), as `requests` counts them
  uint64_t unsent = 0;         // planned in the window, still waiting at its end (open loop)
  uint64_t slot_waits = 0;     // due but every connection was at --inflight (open loop)
  uint64_t responses = 0;      // response frames received at all (warm-up included)
  // --stream (warm-up included): streams the server accepted, opens it refused (or that could
  // not be asked for) by code, and open streams dropped after a failure (a message's timeout,
  // the stream's end or reset, a lost connection) to be opened again.
  uint64_t streams_opened = 0;
  std::map<std::string, uint64_t> open_failures;
  uint64_t streams_dropped = 0;

  void Merge(const LoadStats& o);
};

/// One progress interval (a second) of one worker, or of all of them merged: untagged
/// successful latencies, completed calls and failed calls.
struct IntervalStats {
  Histogram latency;
  uint64_t requests = 0;
  uint64_t errors = 0;

  void Merge(const IntervalStats& o);
  void Reset();
};

}  // namespace trpc::bench
