#pragma once

#include <functional>
#include <utility>

#include "trpc/server/rpc_method_handler.h"
#include "trpc/server/server_stream.h"

namespace trpc {

/// A streaming method: the server's stream path runs HandleStream() once per stream the client
/// opens, in a fiber of its own; its status ends the stream (success and an application error
/// close it, a framework error resets it). A unary frame for it is answered with ret 12.
class StreamRpcMethodHandler : public RpcMethodHandler {
 public:
  bool IsStream() const final { return true; }
  void Handle(const ServerContextPtr& ctx) final;
  virtual Status HandleStream(const ServerContextPtr& ctx, const stream::ServerStream& stream) = 0;
};

/// One request message in, a stream of replies out.
template <typename R, typename W>
class ServerStreamingMethodHandler final : public StreamRpcMethodHandler {
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
class ClientStreamingMethodHandler final : public StreamRpcMethodHandler {
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
class BidiStreamingMethodHandler final : public StreamRpcMethodHandler {
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

}  // namespace trpc
