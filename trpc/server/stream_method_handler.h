#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "trpc/future/future.h"
#include "trpc/server/rpc_method_handler.h"
#include "trpc/server/server_stream.h"

namespace trpc {

/// A streaming method: the server's stream path starts it once per stream a client opens, and
/// its end status ends the stream (success and an application error close it, a framework
/// error resets it). A unary frame for it is answered with ret 12.
class StreamRpcMethodHandler : public RpcMethodHandler {
 public:
  using Done = std::function<void(const Status&)>;

  bool IsStream() const final { return true; }
  void Handle(const ServerContextPtr& ctx) final;
  /// Never blocks (its reads and writes are the non-blocking ones): it may run on a reactor,
  /// so the merged model serves it. A blocking one runs in a fiber of its own (fiber model).
  virtual bool IsAsync() const = 0;
  /// Runs the stream; calls `done` exactly once, with how it ended, from whichever thread it
  /// ends on.
  virtual void StartStream(const ServerContextPtr& ctx, const stream::ServerStream& stream,
                           Done done) = 0;
};

/// The blocking kinds: the handler's body returns the stream's end status.
class SyncStreamRpcMethodHandler : public StreamRpcMethodHandler {
 public:
  bool IsAsync() const final { return false; }
  void StartStream(const ServerContextPtr& ctx, const stream::ServerStream& stream,
                   Done done) final {
    done(HandleStream(ctx, stream));
  }
  virtual Status HandleStream(const ServerContextPtr& ctx, const stream::ServerStream& stream) = 0;
};

/// One request message in, a stream of replies out.
template <typename R, typename W>
class ServerStreamingMethodHandler final : public SyncStreamRpcMethodHandler {
 public:
  using Function =
      std::function<Status(const ServerContextPtr&, const R&, stream::StreamWriter<W>*)>;
  explicit ServerStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  Status HandleStream(const ServerContextPtr& ctx, const stream::ServerStream& stream) override {
    R req;
    Status st = stream.Read(&req);
    if (!st.OK()) {
      return st.StreamEof() ? Status(kServerDecodeErr, "the client sent no request message") : st;
    }
    stream::StreamWriter<W> writer(stream);
    return fn_(ctx, req, &writer);
  }

 private:
  Function fn_;
};

/// A stream of request messages in, one reply out (written when the handler returns OK).
template <typename R, typename W>
class ClientStreamingMethodHandler final : public SyncStreamRpcMethodHandler {
 public:
  using Function =
      std::function<Status(const ServerContextPtr&, const stream::StreamReader<R>&, W*)>;
  explicit ClientStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  Status HandleStream(const ServerContextPtr& ctx, const stream::ServerStream& stream) override {
    stream::StreamReader<R> reader(stream);
    W rsp;
    Status st = fn_(ctx, reader, &rsp);
    if (!st.OK()) return st;
    return stream.Write(rsp);
  }

 private:
  Function fn_;
};

/// Streams both ways.
template <typename R, typename W>
class BidiStreamingMethodHandler final : public SyncStreamRpcMethodHandler {
 public:
  using Function = std::function<Status(const ServerContextPtr&, const stream::StreamReader<R>&,
                                        stream::StreamWriter<W>*)>;
  explicit BidiStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  Status HandleStream(const ServerContextPtr& ctx, const stream::ServerStream& stream) override {
    stream::StreamReader<R> reader(stream);
    stream::StreamWriter<W> writer(stream);
    return fn_(ctx, reader, &writer);
  }

 private:
  Function fn_;
};

namespace detail {
// Calls `done` with how `f` resolved (OK, or its error).
inline void EndWith(Future<>&& f, StreamRpcMethodHandler::Done done) {
  if (!f.Valid()) {
    done(Status(kServerSystemErr, "the stream handler returned an invalid future"));
    return;
  }
  std::move(f).Then([done = std::move(done)](Future<>&& r) {
    done(r.IsFailed() ? r.GetException() : kSuccStatus);
  });
}
}  // namespace detail

/// The non-blocking kinds: the handler returns a future that resolves when it is done.
/// One request message in, a stream of replies out.
template <typename R, typename W>
class AsyncServerStreamingMethodHandler final : public StreamRpcMethodHandler {
 public:
  using Function = std::function<Future<>(const ServerContextPtr&, const R&,
                                          const stream::AsyncStreamWriter<W>&)>;
  explicit AsyncServerStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  bool IsAsync() const override { return true; }
  void StartStream(const ServerContextPtr& ctx, const stream::ServerStream& stream,
                   Done done) override {
    detail::EndWith(stream.AsyncRead<R>().Then([this, ctx, stream](std::optional<R>&& req) {
      if (!req.has_value()) {
        return MakeExceptionFuture<>(
            Status(kServerDecodeErr, "the client sent no request message"));
      }
      return fn_(ctx, *req, stream::AsyncStreamWriter<W>(stream));
    }),
                    std::move(done));
  }

 private:
  Function fn_;
};

/// A stream of request messages in, one reply out (written when the future gives it).
template <typename R, typename W>
class AsyncClientStreamingMethodHandler final : public StreamRpcMethodHandler {
 public:
  using Function =
      std::function<Future<W>(const ServerContextPtr&, const stream::AsyncStreamReader<R>&)>;
  explicit AsyncClientStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  bool IsAsync() const override { return true; }
  void StartStream(const ServerContextPtr& ctx, const stream::ServerStream& stream,
                   Done done) override {
    Future<W> rsp = fn_(ctx, stream::AsyncStreamReader<R>(stream));
    if (!rsp.Valid()) {
      done(Status(kServerSystemErr, "the stream handler returned an invalid future"));
      return;
    }
    detail::EndWith(std::move(rsp).Then([stream](W&& msg) { return stream.AsyncWrite(msg); }),
                    std::move(done));
  }

 private:
  Function fn_;
};

/// Streams both ways.
template <typename R, typename W>
class AsyncBidiStreamingMethodHandler final : public StreamRpcMethodHandler {
 public:
  using Function = std::function<Future<>(const ServerContextPtr&,
                                          const stream::AsyncStreamReaderWriter<R, W>&)>;
  explicit AsyncBidiStreamingMethodHandler(Function fn) : fn_(std::move(fn)) {}

  bool IsAsync() const override { return true; }
  void StartStream(const ServerContextPtr& ctx, const stream::ServerStream& stream,
                   Done done) override {
    detail::EndWith(fn_(ctx, stream::AsyncStreamReaderWriter<R, W>(stream)), std::move(done));
  }

 private:
  Function fn_;
};

}  // namespace trpc
