#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace trpc::tracing::detail {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

/// What W3C Trace Context's `traceparent` carries: the trace, the span that made the request,
/// and whether the trace is sampled.
struct SpanContext {
  TraceId trace_id{};
  SpanId span_id{};
  bool sampled = false;

  bool valid() const;
};

/// Parses a `traceparent` value ("00-<32 hex>-<16 hex>-<2 hex>"). Version 00 exactly as the
/// specification writes it; a higher version is read by its first four fields when what follows
/// them starts with '-'; version ff, all-zero ids, upper-case hex or a wrong length are refused
/// (false: the call starts a new trace, as the specification says).
bool ParseTraceparent(std::string_view value, SpanContext* out);
/// The `traceparent` of `ctx` (version 00).
std::string FormatTraceparent(const SpanContext& ctx);
/// The same into `*out`, reusing its buffer.
void FormatTraceparent(const SpanContext& ctx, std::string* out);
/// Lower-case hex of an id.
std::string Hex(const uint8_t* data, size_t n);
/// The same, 2n digits written at `out`.
void PutHexDigits(const uint8_t* data, size_t n, char* out);

/// Random ids (never all zero), from a per-thread xoshiro256++ seeded once from the OS.
TraceId NewTraceId();
SpanId NewSpanId();

/// OpenTelemetry's TraceIdRatioBased decision for a new trace: sampled when the trace id's last
/// 8 bytes, read as a big-endian integer, fall below ratio x 2^64. Deterministic per trace id,
/// so every process with the same ratio decides the same.
bool SampledByRatio(const TraceId& id, double ratio);
/// The same in two steps: the bound for `ratio` (computed once), then a comparison per trace.
uint64_t SamplingBound(double ratio);
bool SampledByBound(const TraceId& id, uint64_t bound);

}  // namespace trpc::tracing::detail
