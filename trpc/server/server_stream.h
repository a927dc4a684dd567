#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/codec/stream_options.h"
#include "trpc/future/future.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

namespace detail {
class StreamCore;
}  // namespace detail

namespace stream {

/// The server's end of one stream (docs/streaming.md): the client's messages in, ours out,
/// parsed and written in the content type and compression the client opened it with. Two
/// forms:
/// - Read() and Write() block the calling fiber (the fiber model runs each synchronous stream
///   handler in a fiber of its own) or thread, never a reactor;
/// - AsyncRead() and AsyncWrite() never block: their futures resolve on the connection's
///   worker when a message comes or the window has room, which is how streams run in the
///   merged model.
/// A copy is the same stream (a handle).
///
/// Thread contract: one read and one write in progress at a time, of either form (a reader
/// and a writer may be two fibers).
class ServerStream {
 public:
  explicit ServerStream(std::shared_ptr<detail::StreamCore> core) : core_(std::move(core)) {}

  /// The next message, parsed into `msg`. At the end of the client's messages a status with
  /// StreamEof() (ret 251); ret 254 when `timeout_ms` (>= 0) passed first; the stream's end
  /// (reset by the client, connection lost: 201) otherwise. Parse errors: ret 1.
  Status Read(google::protobuf::MessageLite* msg, int64_t timeout_ms = -1) const;
  /// Queues `msg` for the client. Blocks while the client's flow-control window is used up
  /// (back-pressure); fails once the stream has ended (reset, connection lost).
  Status Write(const google::protobuf::MessageLite& msg) const;
  Status Write(const google::protobuf::MessageLite& msg, const WriteOptions& opts) const;

  /// The next message, or nullopt at the end of the client's messages; fails with the stream's
  /// end otherwise (as Read()). Never blocks.
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
  /// Resolves when the window had room for `msg` (back-pressure); fails once the stream has
  /// ended. Await each write before the next.
  Future<> AsyncWrite(const google::protobuf::MessageLite& msg) const;
  Future<> AsyncWrite(const google::protobuf::MessageLite& msg, const WriteOptions& opts) const;

  /// Whether the message the last read returned came compressed on the wire: every message of
  /// a trpc stream opened with a content encoding; on gRPC, each message the client flagged
  /// compressed (grpc++ compresses message by message).
  bool LastReadCompressed() const;

 private:
  Future<ChainBuffer> AsyncReadBytes(int64_t timeout_ms) const;
  Status Parse(const ChainBuffer& bytes, google::protobuf::MessageLite* msg) const;
  // Serialized and compressed as the stream's content type and encoding say.
  Status Encode(const google::protobuf::MessageLite& msg, ChainBuffer* out) const;

  std::shared_ptr<detail::StreamCore> core_;
};

/// The typed ends a generated streaming handler gets (tRPC-Cpp's names).
template <typename R>
class StreamReader {
 public:
  explicit StreamReader(ServerStream stream) : stream_(std::move(stream)) {}
  /// As ServerStream::Read: `status.StreamEof()` at the end of the client's messages.
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }

  /// As ServerStream::LastReadCompressed.
  bool LastReadCompressed() const { return stream_.LastReadCompressed(); }

 private:
  ServerStream stream_;
};

template <typename W>
class StreamWriter {
 public:
  explicit StreamWriter(ServerStream stream) : stream_(std::move(stream)) {}
  Status Write(const W& msg) const { return stream_.Write(msg); }
  Status Write(const W& msg, const WriteOptions& opts) const { return stream_.Write(msg, opts); }

 private:
  ServerStream stream_;
};

template <typename R, typename W>
class StreamReaderWriter {
 public:
  explicit StreamReaderWriter(ServerStream stream) : stream_(std::move(stream)) {}
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }
  Status Write(const W& msg) const { return stream_.Write(msg); }
  Status Write(const W& msg, const WriteOptions& opts) const { return stream_.Write(msg, opts); }

  /// As ServerStream::LastReadCompressed.
  bool LastReadCompressed() const { return stream_.LastReadCompressed(); }

 private:
  ServerStream stream_;
};

/// The non-blocking typed ends (merged model, or any handler that must not block).
template <typename R>
class AsyncStreamReader {
 public:
  explicit AsyncStreamReader(ServerStream stream) : stream_(std::move(stream)) {}
  /// nullopt at the end of the client's messages.
  /// `timeout_ms` (>= 0): fails with the read timeout (254 on the server, 354 on the client)
  /// when no message came by then; the stream goes on.
  Future<std::optional<R>> Read(int64_t timeout_ms = -1) const {
    return stream_.template AsyncRead<R>(timeout_ms);
  }

  /// As ServerStream::LastReadCompressed.
  bool LastReadCompressed() const { return stream_.LastReadCompressed(); }

 private:
  ServerStream stream_;
};

template <typename W>
class AsyncStreamWriter {
 public:
  explicit AsyncStreamWriter(ServerStream stream) : stream_(std::move(stream)) {}
  Future<> Write(const W& msg) const { return stream_.AsyncWrite(msg); }
  Future<> Write(const W& msg, const WriteOptions& opts) const {
    return stream_.AsyncWrite(msg, opts);
  }

 private:
  ServerStream stream_;
};

template <typename R, typename W>
class AsyncStreamReaderWriter {
 public:
  explicit AsyncStreamReaderWriter(ServerStream stream) : stream_(std::move(stream)) {}
  /// `timeout_ms` (>= 0): fails with the read timeout (254 on the server, 354 on the client)
  /// when no message came by then; the stream goes on.
  Future<std::optional<R>> Read(int64_t timeout_ms = -1) const {
    return stream_.template AsyncRead<R>(timeout_ms);
  }
  Future<> Write(const W& msg) const { return stream_.AsyncWrite(msg); }
  Future<> Write(const W& msg, const WriteOptions& opts) const {
    return stream_.AsyncWrite(msg, opts);
  }

  /// As ServerStream::LastReadCompressed.
  bool LastReadCompressed() const { return stream_.LastReadCompressed(); }

 private:
  ServerStream stream_;
};

}  // namespace stream
}  // namespace trpc
