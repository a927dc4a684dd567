#pragma once

// EchoEachMessage: a non-blocking bidi handler's body that answers each request with a reply
// carrying its `msg`, until the client's end. A DoWhile loop, so the stack stays flat however
// long the stream.

#include <optional>

#include "trpc/future/loop.h"
#include "trpc/server/server_stream.h"

namespace trpc::testing {

template <typename Req, typename Rsp>
Future<> EchoEachMessage(stream::AsyncStreamReaderWriter<Req, Rsp> rw) {
  return DoWhile([rw] {
    return rw.Read().Then([rw](std::optional<Req>&& req) {
      if (!req.has_value()) return MakeReadyFuture<bool>(false);
      Rsp rsp;
      rsp.set_msg(req->msg());
      return rw.Write(rsp).Then([] { return true; });
    });
  });
}

}  // namespace trpc::testing
