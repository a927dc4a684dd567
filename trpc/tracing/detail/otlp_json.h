#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trpc/tracing/detail/span.h"

namespace trpc::tracing::detail {

/// The OTLP/HTTP JSON body (an ExportTraceServiceRequest in protobuf's JSON mapping as OTLP
/// specifies it: ids as lower-case hex, 64-bit integers as decimal strings, enums as numbers) of
/// `spans`, under one resource with `service.name` = `service_name` and one scope, "trpc".
std::string EncodeOtlpJson(const std::string& service_name,
                           const std::vector<std::unique_ptr<SpanData>>& spans);

}  // namespace trpc::tracing::detail
