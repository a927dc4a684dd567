#include "trpc/tracing/detail/otlp_json.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>

namespace trpc::tracing::detail {

namespace {

void AppendString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s) {
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
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(*out), "\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

void AppendValue(const AttributeValue& v, std::string* out) {
  auto it = std::back_inserter(*out);
  if (const auto* s = std::get_if<std::string>(&v)) {
    *out += R"({"stringValue":)";
    AppendString(*s, out);
  } else if (const auto* i = std::get_if<int64_t>(&v)) {
    fmt::format_to(it, R"({{"intValue":"{}")", *i);  // int64 as a string (protobuf JSON)
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
  auto it = std::back_inserter(out);
  for (size_t i = 0; i < spans.size(); ++i) {
    const SpanData& s = *spans[i];
    if (i > 0) out.push_back(',');
    fmt::format_to(it, R"({{"traceId":"{}","spanId":"{}",)",
                   Hex(s.context.trace_id.data(), s.context.trace_id.size()),
                   Hex(s.context.span_id.data(), s.context.span_id.size()));
    if (s.parent_span_id != SpanId{}) {
      fmt::format_to(it, R"("parentSpanId":"{}",)",
                     Hex(s.parent_span_id.data(), s.parent_span_id.size()));
    }
    out += R"("name":)";
    AppendString(s.name, &out);
    fmt::format_to(it, R"(,"kind":{},"startTimeUnixNano":"{}","endTimeUnixNano":"{}",)",
                   static_cast<int>(s.kind), s.start_unix_ns, s.end_unix_ns);
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
