#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "trpc/tracing/detail/trace_context.h"

namespace trpc::tracing::detail {

/// OpenTelemetry's span kinds (the OTLP numbers).
enum class SpanKind : int { kInternal = 1, kServer = 2, kClient = 3 };

using AttributeValue = std::variant<std::string, int64_t, bool, double>;

/// One finished (or running) span, as the exporter sends it.
struct SpanData {
  SpanContext context;
  SpanId parent_span_id{};  // all zero: a root span
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  int64_t start_unix_ns = 0;
  int64_t end_unix_ns = 0;
  bool error = false;  // status ERROR, with `status_message`; else UNSET
  std::string status_message;
  /// Keys are string literals (the conventions' names): no copy per span.
  std::vector<std::pair<std::string_view, AttributeValue>> attributes;
};

}  // namespace trpc::tracing::detail
