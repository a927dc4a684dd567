#pragma once

#include <cstdint>
#include <string>

#include "trpc/base/chain_buffer.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {

/// Reads a request or response body as `content_type` (kContentTypeProtobuf, kContentTypeJson or
/// kContentTypeNoop, which is read as protobuf; rpc_message.h) into `msg`. JSON needs a full
/// (non-lite) message, accepts both lowerCamelCase and proto field names, and refuses unknown
/// fields. False, with `*err`, when the body does not parse or the content type cannot carry a
/// protobuf message.
bool ParseMessageBody(const ChainBuffer& body, uint32_t content_type,
                      google::protobuf::MessageLite* msg, std::string* err);

/// How a message is written as JSON. The defaults are protobuf's JSON mapping as written by
/// its own printer: lowerCamelCase names, enums by name, fields that hold their default value
/// (0, false, "", empty lists and maps) left out. A message field that is not set, or a proto3
/// `optional` one, is left out either way.
struct JsonStyle {
  bool emit_defaults = false;  // write fields that hold their default value too
  bool proto_names = false;    // the names as the .proto spells them (user_name, not userName)
  bool enums_as_ints = false;  // enum values by number
};

/// tRPC-Go's style for trpc bodies (its protojson options: every field, proto names, enum
/// numbers), so a trpc peer reads our JSON as it reads its own.
inline constexpr JsonStyle kTrpcJsonStyle{true, true, true};

/// Appends `msg` serialized as `content_type` to `out`, JSON in `json` style. False, with
/// `*err`, for a content type that cannot carry a protobuf message (jce, flatbuffer, xml,
/// thrift, unknown) or a message JSON cannot express.
bool SerializeMessageBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          ChainBuffer* out, std::string* err, const JsonStyle& json = {});

/// A message body that may be compressed (`encoding`, trpc.proto's numbers; 0: none), read as
/// `content_type` into `msg`; inflating stops at `max_bytes`. False with `*err` (which says
/// which step failed) otherwise. For stream messages, which carry their encoding in the
/// stream's opening rather than per message.
bool ParseEncodedBody(const ChainBuffer& body, uint32_t content_type, uint32_t encoding,
                      size_t max_bytes, google::protobuf::MessageLite* msg, std::string* err);
/// `msg` serialized as `content_type` (JSON in tRPC-Go's style) and compressed with `encoding`,
/// into `out`. False with `*err`.
bool SerializeEncodedBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          uint32_t encoding, ChainBuffer* out, std::string* err);

}  // namespace trpc
