#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/stream_options.h"
#include "trpc/future/future.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

class ServiceProxy;
namespace detail {
class StreamCore;
}  // namespace detail

namespace stream {

/// The client's end of one stream (docs/streaming.md), opened by ServiceProxy::OpenStream:
/// messages in the content type and compression the context asked for. Blocking: Read(),
/// Write() and Finish() park a fiber or put a plain thread to sleep, so they are for fibers and
/// threads that may block, not for a merge worker. A copy is the same stream (a handle).
///
/// Thread contract: one reader and one writer at a time (they may be two threads).
class ClientStream {
 public:
  ClientStream() = default;
  /// Opened (by a successful OpenStream).
  bool Valid() const { return core_ != nullptr; }

  /// The server's next message, parsed into `msg`; `status.StreamEof()` (ret 351) after its
  /// last; ret 354 when `timeout_ms` (>= 0) passed first; the stream's end otherwise (the
  /// server's reset, 301 for a lost connection).
  Status Read(google::protobuf::MessageLite* msg, int64_t timeout_ms = -1) const;
  /// Sends `msg`; blocks while the server's window is used up. Fails once the stream has ended
  /// or the server has finished it.
  Status Write(const google::protobuf::MessageLite& msg) const;
  /// The same with this message's options (gRPC: no_compression sends it plain on a stream
  /// whose context asked for compression).
  Status Write(const google::protobuf::MessageLite& msg, const WriteOptions& opts) const;
  /// No more messages from us (a half-close); the server's still come.
  Status WritesDone() const;
  /// Half-closes if not done yet, reads (and drops) what the server still sends, and returns
  /// the server's status for the whole stream: OK, its application error, or the framework
  /// error that ended the stream.
  Status Finish() const;
  /// Gives up on the stream: the server's side is reset (ret 161) and both ends end. Dropping
  /// the last handle (copy) of a stream that has not ended does the same.
  void Cancel() const;

  // ---- The non-blocking forms (a merge worker, or any code that must not block): futures
  // that resolve on the connection's loop thread. One read and one write at a time.

  /// The server's next message, or nullopt after its last; fails with the stream's end
  /// otherwise (as Read()).
  template <typename R>
  Future<std::optional<R>> AsyncRead(int64_t timeout_ms = -1) const {
    return AsyncReadBytes(timeout_ms).Then([s = *this](Future<ChainBuffer>&& f) {
      if (f.IsFailed()) {
        if (f.GetException().StreamEof()) return MakeReadyFuture<std::optional<R>>(std::nullopt);
        return MakeExceptionFuture<std::optional<R>>(f.GetException());
      }
      std::optional<R> msg(std::in_place);
      if (Status st = s.Parse(f.GetValue(), &*msg); !st.OK()) {
        return MakeExceptionFuture<std::optional<R>>(std::move(st));
      }
      return MakeReadyFuture<std::optional<R>>(std::move(msg));
    });
  }
  /// Resolves when the server's window had room for `msg` (back-pressure); fails once the
  /// stream has ended. Await each write before the next.
  Future<> AsyncWrite(const google::protobuf::MessageLite& msg) const;
  Future<> AsyncWrite(const google::protobuf::MessageLite& msg, const WriteOptions& opts) const;
  /// As Finish(): half-closes, drops what the server still sends, and resolves with the
  /// server's status for the whole stream (never fails: the status is the value).
  Future<Status> AsyncFinish() const;

 private:
  friend class ::trpc::ServiceProxy;
  // The handles share an owner of `core` (an aliasing pointer): when the last handle goes, the
  // owner cancels a stream still open (StreamCore::Abandon). With `cancel` (the context's
  // CancelSignal), the stream is reset when it fires, while the owner lives.
  explicit ClientStream(std::shared_ptr<detail::StreamCore> core,
                        const std::shared_ptr<CancelSignal>& cancel = nullptr);
  Future<ChainBuffer> AsyncReadBytes(int64_t timeout_ms) const;
  Status Parse(const ChainBuffer& bytes, google::protobuf::MessageLite* msg) const;
  // Serialized and compressed as the stream's content type and encoding say, with `opts`.
  Status Encode(const google::protobuf::MessageLite& msg, const WriteOptions& opts,
                ChainBuffer* out) const;
  // Reads and drops until the server's end, then its final status.
  Future<Status> DrainToEnd() const;

  std::shared_ptr<detail::StreamCore> core_;
};

/// A server stream's client end: the request went out when it was opened; R messages come in.
template <typename R>
class ClientReader {
 public:
  ClientReader() = default;
  explicit ClientReader(ClientStream stream) : stream_(std::move(stream)) {}
  bool Valid() const { return stream_.Valid(); }
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }
  Status Finish() const { return stream_.Finish(); }
  void Cancel() const { stream_.Cancel(); }

 private:
  ClientStream stream_;
};

/// A client stream's client end: W messages go out, then Finish() gets the one reply.
template <typename W, typename R>
class ClientWriter {
 public:
  ClientWriter() = default;
  explicit ClientWriter(ClientStream stream) : stream_(std::move(stream)) {}
  bool Valid() const { return stream_.Valid(); }
  Status Write(const W& msg) const { return stream_.Write(msg); }
  Status Write(const W& msg, const WriteOptions& opts) const { return stream_.Write(msg, opts); }
  /// Half-closes, reads the server's reply into `*response` and returns the stream's status.
  Status Finish(R* response) const {
    stream_.WritesDone();
    Status read = stream_.Read(response);
    Status final = stream_.Finish();
    if (!final.OK()) return final;
    return read.StreamEof() ? Status(kClientDecodeErr, "the server sent no reply") : read;
  }
  void Cancel() const { stream_.Cancel(); }

 private:
  ClientStream stream_;
};

/// Typed views of a client stream: messages of type W go out, R come in.
template <typename W, typename R>
class ClientReaderWriter {
 public:
  ClientReaderWriter() = default;
  explicit ClientReaderWriter(ClientStream stream) : stream_(std::move(stream)) {}
  bool Valid() const { return stream_.Valid(); }
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }
  Status Write(const W& msg) const { return stream_.Write(msg); }
  Status Write(const W& msg, const WriteOptions& opts) const { return stream_.Write(msg, opts); }
  Status WritesDone() const { return stream_.WritesDone(); }
  Status Finish() const { return stream_.Finish(); }
  void Cancel() const { stream_.Cancel(); }

 private:
  ClientStream stream_;
};

/// The non-blocking typed view of a stream (any kind: a server stream reads only, a client
/// stream writes then finishes), from ServiceProxy::AsyncOpenStream or a generated proxy.
template <typename W, typename R>
class AsyncClientReaderWriter {
 public:
  AsyncClientReaderWriter() = default;
  explicit AsyncClientReaderWriter(ClientStream stream) : stream_(std::move(stream)) {}
  bool Valid() const { return stream_.Valid(); }
  /// `timeout_ms` (>= 0): fails with the read timeout (254 on the server, 354 on the client)
  /// when no message came by then; the stream goes on.
  Future<std::optional<R>> Read(int64_t timeout_ms = -1) const {
    return stream_.template AsyncRead<R>(timeout_ms);
  }
  Future<> Write(const W& msg) const { return stream_.AsyncWrite(msg); }
  Future<> Write(const W& msg, const WriteOptions& opts) const {
    return stream_.AsyncWrite(msg, opts);
  }
  Status WritesDone() const { return stream_.WritesDone(); }
  Future<Status> Finish() const { return stream_.AsyncFinish(); }
  void Cancel() const { stream_.Cancel(); }

 private:
  ClientStream stream_;
};

}  // namespace stream
}  // namespace trpc
