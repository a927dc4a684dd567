#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trpc/base/detail/mpmc_queue.h"
#include "trpc/tracing/detail/span.h"
#include "trpc/tracing/tracing_config.h"

namespace trpc::tracing::detail {

/// An OTLP/HTTP endpoint, `http://host:port/path`, split.
struct Endpoint {
  std::string host;
  uint16_t port = 0;
  std::string path;
};
/// False with `*err` for anything but http://HOST[:PORT][/PATH] (port 80 and /v1/traces by
/// default).
bool ParseEndpoint(const std::string& url, Endpoint* out, std::string* err);

/// Sends finished spans to an OTLP/HTTP collector from a thread of its own, in batches.
///
/// A request path only ever calls Enqueue(), which never blocks and never waits for the
/// collector: a bounded lock-free queue (MpmcQueue) takes the span, or, full, drops it and
/// counts it. The exporter thread wakes when a batch is full or batch_timeout has passed,
/// encodes up to batch_size spans as OTLP JSON and POSTs them over a kept-alive connection,
/// each request bounded by export_timeout; a failed request drops its batch (counted) and the
/// next one reconnects. A collector that is slow or down therefore costs the request path
/// nothing but the spans dropped.
///
/// Memory ordering: a span is handed over by the queue (a producer's release store of the cell,
/// the consumer's acquire load), so the exporter sees it whole. The queue's size hint only
/// decides when to wake the thread early; the thread also wakes on its timer, so a missed
/// wake-up delays a batch by batch_timeout at most. The counters are relaxed.
class BatchExporter {
 public:
  struct Stats {
    uint64_t exported = 0;         // spans the collector accepted
    uint64_t dropped = 0;          // spans lost: queue full, a failed export, or no endpoint
    uint64_t export_failures = 0;  // export requests that failed (connect, timeout, non-2xx)
  };

  BatchExporter(TracingConfig config, std::string service_name);
  ~BatchExporter();
  BatchExporter(const BatchExporter&) = delete;
  BatchExporter& operator=(const BatchExporter&) = delete;

  /// Checks the endpoint and starts the thread. False with `*err` for a bad endpoint.
  bool Start(std::string* err);
  /// Takes `span` for export; drops it (counted) when the queue is full. Any thread.
  void Enqueue(std::unique_ptr<SpanData> span);
  /// Exports what is queued (each request still bounded by export_timeout) and joins the
  /// thread. Spans enqueued after this are dropped (counted); one enqueued while it runs may
  /// instead stay queued, uncounted, until the exporter is destroyed.
  void Stop();

  Stats stats() const;

 private:
  void Run();
  // Pops up to batch_size spans into `batch`.
  void Drain(std::vector<std::unique_ptr<SpanData>>* batch);
  void Export(std::vector<std::unique_ptr<SpanData>>* batch);
  // One POST of `body`; true on a 2xx answer.
  bool Post(const std::string& body);
  bool Connect(int64_t deadline_ms);
  void Disconnect();

  const TracingConfig config_;
  const std::string service_name_;
  Endpoint endpoint_;
  MpmcQueue<SpanData> queue_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;  // for the condition variable only
  std::condition_variable wake_;
  std::thread thread_;
  int fd_ = -1;  // the exporter thread's connection
  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> export_failures_{0};
};

}  // namespace trpc::tracing::detail
