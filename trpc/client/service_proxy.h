#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "trpc/client/client_config.h"
#include "trpc/client/client_context.h"
#include "trpc/client/client_filter.h"
#include "trpc/client/client_stream.h"
#include "trpc/future/future.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

class BufferBudget;

class ThreadModel;

/// Calls one callee (a `client.service[]` entry): picks a backend round-robin, multiplexes calls
/// over `max_conn_num` long connections per backend per reactor (or, with conn_type "short", one
/// connection per call), and turns replies and failures into Status.
///
/// A protocol that answers in order (FrameCodec::FifoResponses: http) cannot multiplex: its
/// long connections form a keep-alive pool per backend per reactor (ClientConnectionPool) of up
/// to `max_conn_num` connections, each carrying one call at a time, or up to `pipeline_depth`
/// pipelined ones.
///
/// A call made on one of the thread model's reactor threads uses that reactor's connections, so
/// in the merged model a handler's downstream call never leaves its thread. A call from any other
/// thread goes through the next reactor in turn.
///
/// Thread contract: the invoke methods are safe from any thread. Stop() (or destruction) must
/// happen before the thread model stops.
class ServiceProxy {
 public:
  using Done = std::function<void(const Status&)>;

  ServiceProxy(ClientServiceConfig config, ThreadModel* model);
  virtual ~ServiceProxy();

  /// Parses the targets, finds the codec and resolves the filters. False (with `*err`, "file:line:
  /// ..." when the config came from a file) on a bad config.
  bool Init(std::string* err);
  /// Counts the proxy's connections against `budget` (TrpcClient's client.max_buffered_bytes):
  /// one over its share stops reading, and a call on it fails at once with 124. Before Init().
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget);
  /// Closes every connection; pending calls fail with 141.
  void Stop();

  /// Blocks the calling thread until the reply, the timeout (101) or a failure. Refused with
  /// ret 31 on a thread that must not block (a merge worker): use AsyncUnaryInvoke there.
  Status UnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                     google::protobuf::MessageLite* rsp);
  /// The same, for a generated proxy's synchronous `Method(...)`: the refusal names
  /// `async_name`, the generated method to call instead ("GreeterServiceProxy::AsyncSayHello").
  Status UnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                     google::protobuf::MessageLite* rsp, std::string_view async_name);
  /// The waiting half of any synchronous call (UnaryInvoke, http::HttpCall): refused with ret
  /// 31 where blocking is not allowed (the message names `async_name`, the call to use there);
  /// otherwise runs `start(done)`, which begins the asynchronous call and makes it call
  /// `done(status)` exactly once (after writing any reply), and waits for that: a fiber parks
  /// (its worker runs other fibers meanwhile), a plain thread sleeps on a futex.
  template <typename Start>
  Status WaitFor(const ClientContextPtr& ctx, std::string_view async_name, Start&& start) {
    if (!MayBlock(ctx, async_name)) return ctx->GetStatus();
    SyncWait wait;
    start(wait.Callback());
    return wait.Wait();
  }
  /// Returns at once; `done` runs exactly once on a reactor thread. `req` may be destroyed when
  /// this returns; `rsp` and `ctx` must live until `done` runs.
  void AsyncUnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                        google::protobuf::MessageLite* rsp, Done done);
  /// Returns a future of the reply, resolved on the reactor thread that completes the call (in
  /// the merged model, the calling worker itself: continuations stay on the thread). Fails with
  /// the call's Status. `ctx` must not be reused until the future resolves.
  template <typename Rsp>
  Future<Rsp> AsyncUnaryInvoke(const ClientContextPtr& ctx,
                               const google::protobuf::MessageLite& req) {
    // The reply message and the promise live together until `done` runs.
    struct Pending {
      Rsp rsp;
      Promise<Rsp> promise;
    };
    auto pending = std::make_shared<Pending>();
    Future<Rsp> fut = pending->promise.GetFuture();
    AsyncUnaryInvoke(ctx, req, &pending->rsp, [pending](const Status& st) {
      if (st.OK()) {
        pending->promise.SetValue(std::move(pending->rsp));
      } else {
        pending->promise.SetException(st);
      }
    });
    return fut;
  }
  /// Sends without waiting for (or getting) a reply.
  Status OnewayInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req);

  using FrameDone = std::function<void(const Status&, ChainBuffer&& frame)>;
  /// A call outside the RPC mapping, for a protocol's own API (http_client.h's HttpGet): `req`
  /// comes built by the caller (body, and the protocol's own part, e.g. an HTTP method and
  /// path; func defaults to the context's), the proxy fills in the rest (request id, deadline,
  /// caller, callee, trans_info, backend) and sends it like AsyncUnaryInvoke, with the same
  /// backends, connections, deadlines and RPC_INVOKE/PRE_SEND_MSG filters. `done` gets the
  /// response frame as the codec cut it, undecoded (the Status is not OK when the call failed
  /// in transport: timeout, connect, connection lost), and runs exactly once on a reactor
  /// thread.
  void AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done);

  /// Opens a stream to the function ctx->SetFuncName() names (docs/streaming.md), with ctx's
  /// metadata, content type and compression, and waits for the server's answer: a refusal
  /// (ret 12 for no such streaming method, 22 when over its limits, 101 when it did not answer
  /// within the call timeout) or `*out` open. Blocking, as UnaryInvoke (refused with ret 31 on
  /// a merge worker).
  Status OpenStream(const ClientContextPtr& ctx, stream::ClientStream* out);
  /// OpenStream() without blocking (a merge worker may call it): resolves with the open stream
  /// on the connection's loop thread, or fails with the refusal.
  Future<stream::ClientStream> AsyncOpenStream(const ClientContextPtr& ctx);

  const ClientServiceConfig& config() const;
  ThreadModel* thread_model() const;

 private:
  // The waiting half of WaitFor(): a fiber parks, a plain thread sleeps on a futex.
  class SyncWait {
   public:
    SyncWait();
    ~SyncWait();
    /// The callback the call completes through (exactly once, any thread).
    ServiceProxy::Done Callback();
    /// Blocks until Callback()'s callback ran; returns the status it got.
    Status Wait();

   private:
    struct State;
    std::shared_ptr<State> state_;
  };
  // False (with the refusal in ctx's status) where blocking is not allowed.
  bool MayBlock(const ClientContextPtr& ctx, std::string_view async_name);

  // Connections, pools, codec and filters: behind the public surface (service_proxy.cc).
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trpc
