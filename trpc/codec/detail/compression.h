#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/chain_buffer.h"

namespace trpc::detail {

// Body compressions of the trpc protocol, numbered as trpc.proto's `content_encoding` numbers
// them, in the formats tRPC-Go (codec/compress_*.go) writes and reads:
//
//   0 none           the body as it is
//   1 gzip           RFC 1952; concatenated members are read as one body (Go's gzip reader)
//   2 snappy         deprecated name of 4: tRPC-Go writes and reads the framing format
//                    (tRPC-Cpp the block format; we follow tRPC-Go)
//   3 zlib           RFC 1950; bytes after the stream are ignored (Go's zlib reader)
//   4 snappy-stream  snappy's framing format (framing_format.txt), chunks of <= 64 KiB
//   5 snappy-block   one raw snappy block
//   6 lz4-frame      one LZ4 frame (skippable frames around it are skipped)
//   7 lz4-block      one raw LZ4 block, no length prefix
//
// An empty body compresses to an empty body and an empty body decompresses to an empty body,
// whatever the encoding (tRPC-Go's rule): the peer never sees a format's empty stream. An
// unknown encoding fails even for an empty body (tRPC-Go lets that one through).
//
// Thread contract: plain functions, safe from any thread (each call has its own state).
inline constexpr uint32_t kEncodingNone = 0;
inline constexpr uint32_t kEncodingGzip = 1;
inline constexpr uint32_t kEncodingSnappy = 2;
inline constexpr uint32_t kEncodingZlib = 3;
inline constexpr uint32_t kEncodingSnappyStream = 4;
inline constexpr uint32_t kEncodingSnappyBlock = 5;
inline constexpr uint32_t kEncodingLz4Frame = 6;
inline constexpr uint32_t kEncodingLz4Block = 7;

// True for 0..7.
bool IsSupportedEncoding(uint32_t encoding);
// "none", "gzip", "snappy", "zlib", "snappy-stream", "snappy-block", "lz4-frame", "lz4-block";
// "unknown" otherwise.
std::string_view EncodingName(uint32_t encoding);

// Appends `in` compressed with `encoding` to `*out`. False, with `*err`, on a library error or an
// unknown encoding; `*out` is then left as it was.
bool CompressBody(uint32_t encoding, const ChainBuffer& in, ChainBuffer* out, std::string* err);

// Appends `in` decompressed to `*out`. False, with `*err`, when the input is malformed, the
// encoding unknown, or the output would exceed `max_bytes` (a zip bomb): decompression then stops
// as soon as it knows, having produced at most `max_bytes` plus one ChainBuffer block (8 KiB) of
// output (snappy: no more than `max_bytes`, its chunks and blocks state their size first), and
// `*out` is left as it was. `in` comes from a peer: no byte of it can make this function assert
// or misbehave.
bool DecompressBody(uint32_t encoding, const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                    std::string* err);

// gzip (`gzip` true) or zlib streams for protocols that want a complete stream even for an empty
// message (gRPC's grpc-encoding gzip / deflate): CompressBody's and DecompressBody's zlib code
// without the empty-body rule. Same contracts otherwise.
bool ZlibCompress(bool gzip, const ChainBuffer& in, ChainBuffer* out, std::string* err);
bool ZlibDecompress(bool gzip, const ChainBuffer& in, size_t max_bytes, ChainBuffer* out,
                    std::string* err);

// CRC-32C (Castagnoli), which snappy's framing format checksums chunks with: `crc` (0 to begin)
// extended over `data`, so Crc32c(Crc32c(0, a), b) == Crc32c(0, a + b). Crc32c uses SSE4.2's
// crc32 instruction where the CPU has it; Crc32cPortable always the tables (tests compare them).
uint32_t Crc32c(uint32_t crc, std::string_view data);
uint32_t Crc32cPortable(uint32_t crc, std::string_view data);

}  // namespace trpc::detail
