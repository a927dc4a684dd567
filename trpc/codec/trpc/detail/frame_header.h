#pragma once

#include <cstddef>
#include <cstdint>

namespace trpc {

/// The fixed header that starts every trpc frame. Integers are big-endian; offsets in bytes:
///
///   0        2      3      4             8        10           14    15   16
///   +--------+------+------+-------------+--------+------------+-----+----+
///   | magic  | data | strm |  total size | header | stream id  | ver | 0  |
///   | 0x0930 | type | type | (all bytes) |  size  |            |     |    |
///   +--------+------+------+-------------+--------+------------+-----+----+
///
/// Unary frames from pooled clients carry stream id 0 and version 0; tRPC-Go writes its request
/// id and version 1 there and matches replies by them in its multiplexed mode, so a server
/// copies both into the reply.
///
/// A unary frame continues with its payload:
///
///   +-------------------------------+------+--------------------------------+
///   | protobuf header (header size) | body | attachment (attachment_size)   |
///   +-------------------------------+------+--------------------------------+
///
/// where `attachment_size` is a field of the protobuf header and the body is whatever lies
/// between the header and the attachment. docs/protocol.md has the long form.
inline constexpr size_t kTrpcFrameHeaderSize = 2 + 1 + 1 + 4 + 2 + 4 + 2;
inline constexpr uint16_t kTrpcMagic = 0x0930;
inline constexpr uint8_t kTrpcUnaryDataFrame = 0;    // data frame type (byte 2)
inline constexpr uint8_t kTrpcStreamDataFrame = 1;   // data frame type (byte 2)
inline constexpr uint8_t kTrpcUnaryStreamFrame = 0;  // stream frame type (byte 3) of unary frames
inline constexpr uint32_t kTrpcMaxHeaderSize = UINT16_MAX;
inline constexpr uint64_t kTrpcMaxFrameSize = UINT32_MAX;

/// The decoded fields of a fixed header. A plain value; reading one never fails, deciding whether
/// the values make sense is the caller's job (the bytes come from a peer).
struct TrpcFrameHeader {
  uint16_t magic = kTrpcMagic;
  uint8_t data_frame_type = kTrpcUnaryDataFrame;
  uint8_t stream_frame_type = kTrpcUnaryStreamFrame;
  uint32_t total_size = 0;
  uint16_t header_size = 0;
  uint32_t stream_id = 0;
  uint8_t version = 0;  // byte 14, the protocol version (tRPC-Go: 1)
};

/// Reads the kTrpcFrameHeaderSize bytes at `p`.
inline TrpcFrameHeader LoadTrpcFrameHeader(const char* p) {
  const auto* b = reinterpret_cast<const unsigned char*>(p);
  TrpcFrameHeader h;
  h.magic = static_cast<uint16_t>(b[0] << 8 | b[1]);
  h.data_frame_type = b[2];
  h.stream_frame_type = b[3];
  h.total_size = uint32_t{b[4]} << 24 | uint32_t{b[5]} << 16 | uint32_t{b[6]} << 8 | b[7];
  h.header_size = static_cast<uint16_t>(b[8] << 8 | b[9]);
  h.stream_id = uint32_t{b[10]} << 24 | uint32_t{b[11]} << 16 | uint32_t{b[12]} << 8 | b[13];
  h.version = b[14];
  return h;  // byte 15 is reserved: ignored on read
}

/// Writes `h` as kTrpcFrameHeaderSize bytes at `p` (the reserved byte as 0).
inline void StoreTrpcFrameHeader(const TrpcFrameHeader& h, char* p) {
  auto* b = reinterpret_cast<unsigned char*>(p);
  b[0] = static_cast<unsigned char>(h.magic >> 8);
  b[1] = static_cast<unsigned char>(h.magic);
  b[2] = h.data_frame_type;
  b[3] = h.stream_frame_type;
  b[4] = static_cast<unsigned char>(h.total_size >> 24);
  b[5] = static_cast<unsigned char>(h.total_size >> 16);
  b[6] = static_cast<unsigned char>(h.total_size >> 8);
  b[7] = static_cast<unsigned char>(h.total_size);
  b[8] = static_cast<unsigned char>(h.header_size >> 8);
  b[9] = static_cast<unsigned char>(h.header_size);
  b[10] = static_cast<unsigned char>(h.stream_id >> 24);
  b[11] = static_cast<unsigned char>(h.stream_id >> 16);
  b[12] = static_cast<unsigned char>(h.stream_id >> 8);
  b[13] = static_cast<unsigned char>(h.stream_id);
  b[14] = h.version;
  b[15] = 0;
}

}  // namespace trpc
