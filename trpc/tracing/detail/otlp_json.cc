#include "trpc/tracing/detail/otlp_json.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <iterator>

namespace trpc::tracing::detail {

namespace {

// Characters a JSON string must escape: '"', '\\' and the controls.
constexpr std::array<bool, 256> kNeedsEscape = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = true;
  t['\\'] = true;
  return t;
}();

// `s` as a JSON string: runs without escapes are appended whole.
void AppendString(std::string_view s, std::string* out) {
  out->push_back('"');
  size_t run = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (!kNeedsEscape[c]) continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      default:
        fmt::format_to(std::back_inserter(*out), "\\u{:04x}", c);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

// A decimal integer, without fmt's parsing of a format string.
void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

// `"key":"<hex>"` for an id.
template <size_t N>
void AppendId(std::string_view key, const std::array<uint8_t, N>& id, std::string* out) {
  char hex[2 * N];
  PutHexDigits(id.data(), N, hex);
  out->push_back('"');
  out->append(key);
  out->append("\":\"");
  out->append(hex, sizeof(hex));
  out->push_back('"');
}

void AppendValue(const AttributeValue& v, std::string* out) {
  auto it = std::back_inserter(*out);
  if (const auto* s = std::get_if<std::string>(&v)) {
    *out += R"({"stringValue":)";
    AppendString(*s, out);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    *out += R"({"intValue":")";  // int64 as a string (protobuf JSON)
    AppendInt(*i, out);
    out->push_back('"');
  } else if (const auto* b = std::get_if<bool>(&v)) {
    fmt::format_to(it, R"({{"boolValue":{})", *b);
  } else {
    double d = std::get<double>(v);
    fmt::format_to(it, R"({{"doubleValue":{})", std::isfinite(d) ? d : 0.0);
  }
  out->push_back('}');
}

void AppendAttributes(const std::vector<std::pair<std::string_view, AttributeValue>>& attributes,
                      std::string* out) {
  *out += R"("attributes":[)";
  for (size_t i = 0; i < attributes.size(); ++i) {
    if (i > 0) out->push_back(',');
    *out += R"({"key":)";
    AppendString(attributes[i].first, out);
    *out += R"(,"value":)";
    AppendValue(attributes[i].second, out);
    out->push_back('}');
  }
  out->push_back(']');
}

}  // namespace

std::string EncodeOtlpJson(const std::string& service_name,
                           const std::vector<std::unique_ptr<SpanData>>& spans) {
  std::string out;
  out.reserve(256 + spans.size() * 512);
  out += R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":)";
  out += R"({"stringValue":)";
  AppendString(service_name, &out);
  out += R"(}}]},"scopeSpans":[{"scope":{"name":"trpc"},"spans":[)";
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanData& s = *spans[i];
    if (i > 0) out.push_back(',');
    out.push_back('{');
    AppendId("traceId", s.context.trace_id, &out);
    out.push_back(',');
    AppendId("spanId", s.context.span_id, &out);
    out.push_back(',');
    if (s.parent_span_id != SpanId{}) {
      AppendId("parentSpanId", s.parent_span_id, &out);
      out.push_back(',');
    }
    out += R"("name":)";
    AppendString(s.name, &out);
    out += R"(,"kind":)";
    AppendInt(static_cast<int>(s.kind), &out);
    out += R"(,"startTimeUnixNano":")";
    AppendInt(s.start_unix_ns, &out);
    out += R"(","endTimeUnixNano":")";
    AppendInt(s.end_unix_ns, &out);
    out += R"(",)";
    AppendAttributes(s.attributes, &out);
    if (s.error) {
      out += R"(,"status":{"code":2,"message":)";
      AppendString(s.status_message, &out);
      out.push_back('}');
    }
    out.push_back('}');
  }
  out += "]}]}]}";
  return out;
}

}  // namespace trpc::tracing::detail
