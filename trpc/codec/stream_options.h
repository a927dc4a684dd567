#pragma once

namespace trpc::stream {

/// One stream message's options (the optional argument of a stream's Write, on either end).
struct WriteOptions {
  /// Send this message uncompressed on a stream that compresses its messages (gRPC: after
  /// grpc::SetResponseCompression on the server, or with a request compression on the client);
  /// trpc streams compress all their messages or none.
  bool no_compression = false;
};

}  // namespace trpc::stream
