#pragma once

#include <cstdint>
#include <memory>

#include "trpc/base/status.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

namespace detail {
class ServerStreamCore;
}  // namespace detail

namespace stream {

/// The server's end of one stream (docs/streaming.md): the client's messages in, ours out,
/// parsed and written in the content type and compression the client opened it with.
/// Synchronous: Read() and Write() block the calling fiber (the fiber model runs each stream
/// handler in a fiber of its own), never a worker.
///
/// Thread contract: one reader and one writer at a time (they may be two fibers).
class ServerStream {
 public:
  explicit ServerStream(std::shared_ptr<detail::ServerStreamCore> core) : core_(std::move(core)) {}

  /// The next message, parsed into `msg`. At the end of the client's messages a status with
  /// StreamEof() (ret 251); ret 254 when `timeout_ms` (>= 0) passed first; the stream's end
  /// (reset by the client, connection lost: 201) otherwise. Parse errors: ret 1.
  Status Read(google::protobuf::MessageLite* msg, int64_t timeout_ms = -1) const;
  /// Queues `msg` for the client. Blocks while the client's flow-control window is used up
  /// (back-pressure); fails once the stream has ended (reset, connection lost).
  Status Write(const google::protobuf::MessageLite& msg) const;

 private:
  std::shared_ptr<detail::ServerStreamCore> core_;
};

/// The typed ends a generated streaming handler gets (tRPC-Cpp's names).
template <typename R>
class StreamReader {
 public:
  explicit StreamReader(ServerStream stream) : stream_(std::move(stream)) {}
  /// As ServerStream::Read: `status.StreamEof()` at the end of the client's messages.
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }

 private:
  ServerStream stream_;
};

template <typename W>
class StreamWriter {
 public:
  explicit StreamWriter(ServerStream stream) : stream_(std::move(stream)) {}
  Status Write(const W& msg) const { return stream_.Write(msg); }

 private:
  ServerStream stream_;
};

template <typename R, typename W>
class StreamReaderWriter {
 public:
  explicit StreamReaderWriter(ServerStream stream) : stream_(std::move(stream)) {}
  Status Read(R* msg, int64_t timeout_ms = -1) const { return stream_.Read(msg, timeout_ms); }
  Status Write(const W& msg) const { return stream_.Write(msg); }

 private:
  ServerStream stream_;
};

}  // namespace stream
}  // namespace trpc
