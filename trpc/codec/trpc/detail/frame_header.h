#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

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

/// Big-endian <-> host order (the same operation both ways).
inline uint16_t BigEndian16(uint16_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap16(v);
  return v;
}
inline uint32_t BigEndian32(uint32_t v) {
  if constexpr (std::endian::native == std::endian::little) return __builtin_bswap32(v);
  return v;
}

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

/// Reads the kTrpcFrameHeaderSize bytes at `p`. (Whole big-endian words, byte-swapped: a few
/// loads where byte-by-byte assembly takes dozens of instructions per frame.)
inline TrpcFrameHeader LoadTrpcFrameHeader(const char* p) {
  uint16_t magic, header_size;
  uint32_t total_size, stream_id;
  std::memcpy(&magic, p, 2);
  std::memcpy(&total_size, p + 4, 4);
  std::memcpy(&header_size, p + 8, 2);
  std::memcpy(&stream_id, p + 10, 4);
  TrpcFrameHeader h;
  h.magic = BigEndian16(magic);
  h.data_frame_type = static_cast<uint8_t>(p[2]);
  h.stream_frame_type = static_cast<uint8_t>(p[3]);
  h.total_size = BigEndian32(total_size);
  h.header_size = BigEndian16(header_size);
  h.stream_id = BigEndian32(stream_id);
  h.version = static_cast<uint8_t>(p[14]);
  return h;  // byte 15 is reserved: ignored on read
}

/// Writes `h` as kTrpcFrameHeaderSize bytes at `p` (the reserved byte as 0).
inline void StoreTrpcFrameHeader(const TrpcFrameHeader& h, char* p) {
  const uint16_t magic = BigEndian16(h.magic), header_size = BigEndian16(h.header_size);
  const uint32_t total_size = BigEndian32(h.total_size), stream_id = BigEndian32(h.stream_id);
  std::memcpy(p, &magic, 2);
  p[2] = static_cast<char>(h.data_frame_type);
  p[3] = static_cast<char>(h.stream_frame_type);
  std::memcpy(p + 4, &total_size, 4);
  std::memcpy(p + 8, &header_size, 2);
  std::memcpy(p + 10, &stream_id, 4);
  p[14] = static_cast<char>(h.version);
  p[15] = 0;
}

}  // namespace trpc
