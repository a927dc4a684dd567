#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trpc::http::detail {

/// The JSON error body the HTTP server codec sends with a failed RPC (http_codec.h):
///
///   {"code": <ret>, "func_code": <func_ret>, "message": "<error_msg>"}
struct ErrorBody {
  int32_t code = 0;
  int32_t func_code = 0;
  std::string message;
  bool has_code = false;  // "code" or "func_code" was present
};

/// Reads `json` as an ErrorBody: one JSON object (RFC 8259) whose members "code" and
/// "func_code" are integers that fit 32 bits and "message" is a string; other members, of any
/// type, are skipped. False on anything else (not JSON, nested deeper than 16, a known member
/// of the wrong type, trailing bytes): the body is then not the server's error body. Peer
/// bytes: never trusted, never asserted on.
bool ParseErrorBody(std::string_view json, ErrorBody* out);

}  // namespace trpc::http::detail
