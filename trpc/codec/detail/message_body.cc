#include "trpc/codec/detail/message_body.h"

#include <fmt/format.h>
#include <google/protobuf/message.h>
#include <google/protobuf/util/json_util.h>

#include <iterator>
#include <string>

#include "trpc/base/zero_copy_stream.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/codec/detail/compression.h"

namespace trpc {

namespace {
const google::protobuf::Message* AsFullMessage(const google::protobuf::MessageLite* msg) {
  // Lite messages have no descriptors, so no JSON mapping.
  return dynamic_cast<const google::protobuf::Message*>(msg);
}
// The serializations a protobuf message can be read from and written as: protobuf, JSON, and
// noop (raw bytes, taken to be protobuf's). The rest of trpc.proto's list (jce, flatbuffers,
// xml, thrift) cannot carry a protobuf message. Inline for the common case; the refusal's
// message is made out of line.
[[gnu::noinline, gnu::cold]] bool RefuseContentType(uint32_t content_type, std::string* err) {
  static constexpr const char* kNames[] = {"protobuf", "jce", "json",  "flatbuffer",
                                           "noop",     "xml", "thrift"};
  *err = "unsupported content_type " + std::to_string(content_type);
  if (content_type < std::size(kNames)) *err += std::string(" (") + kNames[content_type] + ")";
  return false;
}

inline bool KnownContentType(uint32_t content_type, std::string* err) {
  if (content_type == kContentTypeProtobuf) [[likely]]
    return true;
  if (content_type == kContentTypeJson || content_type == kContentTypeNoop) return true;
  return RefuseContentType(content_type, err);
}

}  // namespace

namespace {

// JSON, or a refusal: out of line, so that a protobuf body pays one comparison for them.
[[gnu::noinline]] bool ParseJsonBody(const ChainBuffer& body, uint32_t content_type,
                                     google::protobuf::MessageLite* msg, std::string* err) {
  if (!KnownContentType(content_type, err)) return false;
  {
    auto* full = const_cast<google::protobuf::Message*>(AsFullMessage(msg));
    if (full == nullptr) {
      *err = "JSON body for a message type without descriptors (lite runtime)";
      return false;
    }
    std::string text = body.ToString();
    auto st = google::protobuf::util::JsonStringToMessage(text, full);
    if (!st.ok()) {
      *err = "cannot parse the JSON body: " + std::string(st.message());
      return false;
    }
    return true;
  }
}

}  // namespace

bool ParseMessageBody(const ChainBuffer& body, uint32_t content_type,
                      google::protobuf::MessageLite* msg, std::string* err) {
  if (content_type != kContentTypeProtobuf && content_type != kContentTypeNoop) [[unlikely]] {
    return ParseJsonBody(body, content_type, msg, err);
  }
  bool ok;
  if (body.SpanCount() <= 1) {
    std::string_view s = body.FirstSpan();
    ok = msg->ParseFromArray(s.data(), static_cast<int>(s.size()));
  } else {
    ChainBufferInputStream in(&body);
    ok = msg->ParseFromZeroCopyStream(&in);
  }
  if (!ok) *err = "cannot parse the request body";
  return ok;
}

bool SerializeMessageBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          ChainBuffer* out, std::string* err, const JsonStyle& json) {
  if (!KnownContentType(content_type, err)) [[unlikely]]
    return false;
  if (content_type == kContentTypeJson) {
    const auto* full = AsFullMessage(&msg);
    if (full == nullptr) {
      *err = "JSON reply for a message type without descriptors (lite runtime)";
      return false;
    }
    std::string text;
    google::protobuf::util::JsonPrintOptions options;
#if GOOGLE_PROTOBUF_VERSION >= 5026000
    options.always_print_fields_with_no_presence = json.emit_defaults;
#else
    options.always_print_primitive_fields = json.emit_defaults;
#endif
    options.preserve_proto_field_names = json.proto_names;
    options.always_print_enums_as_ints = json.enums_as_ints;
    auto st = google::protobuf::util::MessageToJsonString(*full, &text, options);
    if (!st.ok()) {
      *err = "cannot write the JSON body: " + std::string(st.message());
      return false;
    }
    out->Append(text);
    return true;
  }
  ChainBufferOutputStream os(out);
  if (!msg.SerializeToZeroCopyStream(&os)) {
    *err = "cannot serialize the body";
    return false;
  }
  return true;
}

bool ParseEncodedBody(const ChainBuffer& body, uint32_t content_type, uint32_t encoding,
                      size_t max_bytes, google::protobuf::MessageLite* msg, std::string* err) {
  if (encoding == 0) return ParseMessageBody(body, content_type, msg, err);
  ChainBuffer plain;
  if (!detail::DecompressBody(encoding, body, max_bytes, &plain, err)) {
    *err =
        fmt::format("cannot decompress the {} message: {}", detail::EncodingName(encoding), *err);
    return false;
  }
  return ParseMessageBody(plain, content_type, msg, err);
}

bool SerializeEncodedBody(const google::protobuf::MessageLite& msg, uint32_t content_type,
                          uint32_t encoding, ChainBuffer* out, std::string* err) {
  if (encoding == 0) return SerializeMessageBody(msg, content_type, out, err, kTrpcJsonStyle);
  ChainBuffer plain;
  if (!SerializeMessageBody(msg, content_type, &plain, err, kTrpcJsonStyle)) return false;
  return detail::CompressBody(encoding, plain, out, err);
}

}  // namespace trpc
