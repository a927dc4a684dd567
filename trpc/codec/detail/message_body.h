#pragma once

#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

/// Reads a request or response body as `content_type` (kContentTypeProtobuf or kContentTypeJson,
/// codec.h) into `msg`. JSON needs a full (non-lite) message; unknown JSON fields are an error.
/// False, with `*err`, when the body does not parse.
bool ParseMessageBody(const ChainBuffer& body, uint32_t content_type,
                      google::protobuf::MessageLite* msg, std::string* err);

/// Appends `msg` serialized as `content_type` to `out`. JSON uses the proto field names
/// (lowerCamelCase, as protobuf's JSON mapping specifies) and omits fields that hold their
/// default value (0, false, "", empty lists and maps) unless `json_emit_defaults` is true; a
/// message field that is not set, or a proto3 `optional` one, is left out either way.
bool SerializeMessageBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          ChainBuffer* out, std::string* err, bool json_emit_defaults = false);

}  // namespace trpc
