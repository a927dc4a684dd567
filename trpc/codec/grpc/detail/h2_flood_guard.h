#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace trpc::grpc::detail {

/// Per-second limits on the frames a peer may send that cost us work but carry nothing
/// (`protocol_options` of a gRPC service, docs/grpc.md). Each is a token bucket whose rate is
/// also its burst.
struct FloodLimits {
  uint32_t ping_per_second = 100;      // PING (not ACKs)
  uint32_t settings_per_second = 100;  // SETTINGS (not ACKs)
  /// DATA frames that carry no data (length 0, or padding only) and do not end their stream.
  uint32_t empty_data_per_second = 100;
  uint32_t priority_per_second = 100;  // PRIORITY
  /// WINDOW_UPDATE frames beyond two per DATA frame we sent (an honest peer sends them as it
  /// reads our DATA: one for the stream, one for the connection).
  uint32_t window_update_per_second = 100;
};

/// Counts the peer's frames as the bytes arrive, with its own parse of the 9-byte frame
/// headers, before nghttp2 sees them: frames nghttp2 ignores without a callback (DATA on
/// closed streams, unknown types) count as well, and a flood is cut before nghttp2 spends
/// time on it. It ends the connection (the caller sends GOAWAY(ENHANCE_YOUR_CALM)), as Envoy's
/// and nginx's flood limits do.
///
///   frame: +-----------+--------+---------+-------------------+------------------+
///          | length 24 | type 8 | flags 8 | R 1 | stream id 31 | payload (length) |
///          +-----------+--------+---------+-------------------+------------------+
///
/// Thread contract: the connection's loop thread only (it is part of an H2Session).
class H2FloodGuard {
 public:
  /// `server`: the input starts with the 24-byte client preface.
  H2FloodGuard(const FloodLimits& limits, bool server);

  /// Scans the next bytes of input. Returns null, or what was flooded (a constant string):
  /// the connection must end.
  const char* Scan(std::string_view bytes);
  /// We sent a DATA frame: two more WINDOW_UPDATEs are expected.
  void OnDataSent();
  /// We opened a stream, or queued a stream message: `n` more WINDOW_UPDATEs are expected. A
  /// peer may answer each message it reads with up to three (the stream's, the connection's,
  /// and the next prefix's: grpc++ does), and a stream it accepts with one, however many
  /// messages share a DATA frame.
  void Earn(uint64_t n);

 private:
  struct Bucket {
    double tokens = 0;
    int64_t last_ns = 0;
    bool Take(double rate);
  };
  const char* OnFrame(uint32_t length, uint8_t type, uint8_t flags);

  FloodLimits limits_;
  uint8_t head_[9];
  size_t head_len_ = 0;
  size_t skip_ = 0;               // payload (or preface) bytes still to pass over
  bool pad_length_next_ = false;  // a padded DATA frame without END_STREAM: its first byte
  uint32_t padded_length_ = 0;    // that frame's length
  uint64_t window_update_credit_ = 0;
  Bucket ping_, settings_, empty_data_, priority_, window_update_;
};

}  // namespace trpc::grpc::detail
