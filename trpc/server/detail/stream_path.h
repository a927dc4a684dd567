#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/runtime/detail/thread_model.h"
#include "trpc/server/detail/request_path.h"
#include "trpc/server/detail/server_call.h"
#include "trpc/server/detail/service_counters.h"
#include "trpc/server/server_config.h"
#include "trpc/server/service.h"
#include "trpc/server/stream_method_handler.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// One service's streams: the stream frames of its connections go to a per-connection stream
/// session (the codec's ServerStreamSession), whose opens are admitted as calls are (the
/// request path's Admit: the stream's call holds its max_concurrency slot and parked-work
/// permit until the stream ends) and run as one handler per stream, in a fiber (fiber model).
/// Protocol-neutral, as the request path is.
///
/// Thread contract: OnFrame and OnClose on the connection's loop thread, which owns that
/// connection's part; a stream's handler where the thread model runs it.
class StreamPath final {
 public:
  /// All must outlive this.
  StreamPath(const ServiceConfig& config, Service* service, ThreadModel* model, ServerCodec* codec,
             RequestPath* admission, ServiceCounters* counters);
  ~StreamPath();

  /// A stream frame (ServerCodec::IsStreamFrame) read from `conn`.
  void OnFrame(Connection* conn, ChainBuffer&& frame);
  /// `conn` closed: its streams end (ret 201 to their handlers).
  void OnClose(Connection* conn);

  /// Streams open on reactor `reactor`'s connections (its loop).
  size_t open_streams(size_t reactor) const;
  /// Stream handlers started whose end (`done`) has not finished yet: they still use this
  /// path and the adapter's limiter, counters and filters, so a stopped adapter with some is
  /// kept (Server::NoteStopped). Acquire: a 0 orders their last use before the caller's.
  int64_t handlers_running() const { return handlers_running_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> handlers_running_{0};
  class ConnStreams;
  friend class ConnStreams;
  // Starts a stream's handler where the thread model runs it.
  class StartTask final : public Task {
   public:
    StartTask(StreamPath* path, ServerContextPtr&& ctx, StreamRpcMethodHandler* method)
        : path_(path), ctx_(std::move(ctx)), method_(method) {}
    void Run() override;

   private:
    StreamPath* path_;
    ServerContextPtr ctx_;
    StreamRpcMethodHandler* method_;
  };
  // An INIT admitted or refused (ConnStreams::OnStreamOpen).
  void Open(ConnStreams* cs, uint32_t id, RpcRequest&& head);
  void RunStream(const ServerContextPtr& ctx, StreamRpcMethodHandler* method);

  const ServiceConfig& config_;
  Service* service_;
  ThreadModel* model_;
  ServerCodec* codec_;
  RequestPath* admission_;
  ServiceCounters* counters_;
  // Per reactor: its connections' stream parts, made at a connection's first stream frame.
  std::vector<std::unordered_map<Connection*, std::unique_ptr<ConnStreams>>> conns_;
};

}  // namespace trpc::detail
