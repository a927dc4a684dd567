#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/chain_buffer.h"

namespace trpc::grpc::detail {

// The pieces of gRPC's HTTP/2 mapping that are plain functions: the grpc-timeout header, the
// grpc-message percent-encoding, base64 of "-bin" metadata, and message compression.

// "grpc-timeout": up to 8 digits and a unit (H, M, S, m, u, n). False if malformed.
bool ParseTimeout(std::string_view v, int64_t* ns);
// The shortest exact form for `ms` (ms > 0), in the largest unit that keeps 8 digits.
std::string FormatTimeout(int64_t ms);

// grpc-message: bytes outside 0x20..0x7E, and '%', as %XX (upper-case hex).
std::string PercentEncode(std::string_view s);
// The reverse; a '%' not followed by two hex digits is kept as it is (the spec: decode leniently).
std::string PercentDecode(std::string_view s);

// "-bin" metadata values: base64 without padding on the way out; padded or not on the way in.
std::string Base64Encode(std::string_view s);
bool Base64Decode(std::string_view s, std::string* out);

// Message compression (grpc-encoding). Supported: "identity", "gzip", "deflate" (zlib format).
bool IsSupportedEncoding(std::string_view name);
// Compresses `in` with `encoding` ("gzip" or "deflate"); false on a zlib error.
bool Compress(std::string_view encoding, const ChainBuffer& in, ChainBuffer* out);
// Decompresses; false if the input is not valid or inflates past `max_bytes` (a zip bomb).
bool Decompress(std::string_view encoding, const ChainBuffer& in, size_t max_bytes,
                ChainBuffer* out, std::string* err);

// True if the comma-separated list `accept` (grpc-accept-encoding) names `encoding`.
bool AcceptsEncoding(std::string_view accept, std::string_view encoding);

}  // namespace trpc::grpc::detail
