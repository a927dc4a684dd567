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
/// (lowerCamelCase, as protobuf's JSON mapping specifies) and omits default values.
bool SerializeMessageBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          ChainBuffer* out, std::string* err);

}  // namespace trpc
