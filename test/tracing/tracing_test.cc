#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "trpc/tracing/detail/exporter.h"
#include "trpc/tracing/detail/otlp_json.h"
#include "trpc/tracing/detail/trace_context.h"

namespace trpc::tracing::detail {
namespace {

// The specification's own example.
constexpr char kExample[] = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(TraceparentTest, ParsesAndFormatsTheSpecificationsExample) {
  SpanContext c;
  ASSERT_TRUE(ParseTraceparent(kExample, &c));
  EXPECT_TRUE(c.sampled);
  EXPECT_TRUE(c.valid());
  EXPECT_EQ(Hex(c.trace_id.data(), 16), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(Hex(c.span_id.data(), 8), "00f067aa0ba902b7");
  EXPECT_EQ(FormatTraceparent(c), kExample);
  ASSERT_TRUE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", &c));
  EXPECT_FALSE(c.sampled);
  // Flags other than "sampled" are ignored (the bit alone decides).
  ASSERT_TRUE(ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-03", &c));
  EXPECT_TRUE(c.sampled);
}

TEST(TraceparentTest, RefusesWhatTheSpecificationRefuses) {
  SpanContext c;
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",       // no flags
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // v00 with more
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // version ff
           "0-04bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // misplaced dash
           "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",    // not hex
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0z",
       }) {
    EXPECT_FALSE(ParseTraceparent(bad, &c)) << bad;
  }
  // A later version is read by its first fields when what follows starts with '-'.
  EXPECT_TRUE(ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what", &c));
  EXPECT_TRUE(ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &c));
  EXPECT_FALSE(ParseTraceparent("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", &c));
}

TEST(TraceparentTest, NewIdsAreNonZeroAndDiffer) {
  TraceId a = NewTraceId(), b = NewTraceId();
  EXPECT_NE(a, TraceId{});
  EXPECT_NE(a, b);
  EXPECT_NE(NewSpanId(), SpanId{});
}

TEST(SamplerTest, RatioBoundsAndProportion) {
  TraceId id{};
  id[15] = 1;
  EXPECT_TRUE(SampledByRatio(id, 1.0));
  EXPECT_FALSE(SampledByRatio(id, 0.0));
  // Deterministic per id: the low 8 bytes against ratio x 2^64.
  TraceId high{};
  high[8] = 0x80;  // 2^63: sampled only above one half
  EXPECT_FALSE(SampledByRatio(high, 0.5));
  EXPECT_TRUE(SampledByRatio(high, 0.51));
  int sampled = 0;
  for (int i = 0; i < 20000; ++i) sampled += SampledByRatio(NewTraceId(), 0.01) ? 1 : 0;
  EXPECT_GT(sampled, 120);  // 200 expected; 8 sigma either way
  EXPECT_LT(sampled, 320);
}

TEST(OtlpJsonTest, EncodesSpansAsTheSpecificationMapsThem) {
  std::vector<std::unique_ptr<SpanData>> spans;
  auto s = std::make_unique<SpanData>();
  ASSERT_TRUE(ParseTraceparent(kExample, &s->context));
  s->parent_span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  s->name = "pkg.S/M";
  s->kind = SpanKind::kServer;
  s->start_unix_ns = 1700000000000000000;
  s->end_unix_ns = 1700000000001500000;
  s->attributes = {{"rpc.system", std::string("trpc")},
                   {"n", int64_t{-7}},
                   {"b", true},
                   {"d", 0.5},
                   {"q", std::string("a\"b\\c\n\x01")}};
  s->error = true;
  s->status_message = "boom";
  spans.push_back(std::move(s));
  auto root = std::make_unique<SpanData>();
  root->context.trace_id = spans[0]->context.trace_id;
  root->context.span_id = {9, 9, 9, 9, 9, 9, 9, 9};
  root->name = "r";
  root->kind = SpanKind::kClient;
  spans.push_back(std::move(root));
  EXPECT_EQ(
      EncodeOtlpJson("app.srv", spans),
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":)"
      R"({"stringValue":"app.srv"}}]},"scopeSpans":[{"scope":{"name":"trpc"},"spans":[)"
      R"({"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7",)"
      R"("parentSpanId":"0102030405060708","name":"pkg.S/M","kind":2,)"
      R"("startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000001500000",)"
      R"("attributes":[{"key":"rpc.system","value":{"stringValue":"trpc"}},)"
      R"({"key":"n","value":{"intValue":"-7"}},{"key":"b","value":{"boolValue":true}},)"
      R"({"key":"d","value":{"doubleValue":0.5}},)"
      R"({"key":"q","value":{"stringValue":"a\"b\\c\n\u0001"}}],)"
      R"("status":{"code":2,"message":"boom"}},)"
      R"({"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"0909090909090909",)"
      R"("name":"r","kind":3,"startTimeUnixNano":"0","endTimeUnixNano":"0","attributes":[]}]}]}]})");
}

TEST(EndpointTest, Urls) {
  Endpoint e;
  std::string err;
  ASSERT_TRUE(ParseEndpoint("http://127.0.0.1:4318/v1/traces", &e, &err)) << err;
  EXPECT_EQ(e.host, "127.0.0.1");
  EXPECT_EQ(e.port, 4318);
  EXPECT_EQ(e.path, "/v1/traces");
  ASSERT_TRUE(ParseEndpoint("http://collector", &e, &err));
  EXPECT_EQ(e.port, 80);
  EXPECT_EQ(e.path, "/v1/traces");
  ASSERT_TRUE(ParseEndpoint("http://[::1]:4318/x", &e, &err));
  EXPECT_EQ(e.host, "::1");
  EXPECT_EQ(e.path, "/x");
  for (const char* bad : {"https://c:4318", "c:4318", "http://:4318", "http://c:0", "http://c:x",
                          "http://c:70000", "http://[::1", "http://[::1]x"}) {
    EXPECT_FALSE(ParseEndpoint(bad, &e, &err)) << bad;
  }
  EXPECT_NE(err.find("expected"), std::string::npos);
}

// A full queue drops (and counts) instead of waiting; a stopped exporter drops too.
TEST(ExporterTest, AFullQueueDropsAndCounts) {
  TracingConfig c;
  c.queue_size = 4;
  c.batch_size = 1000;  // never a full batch: nothing leaves before the timer
  c.batch_timeout = 60'000;
  BatchExporter e(c, "svc");  // no endpoint: what is exported is dropped, counted
  std::string err;
  ASSERT_TRUE(e.Start(&err));
  for (int i = 0; i < 10; ++i) e.Enqueue(std::make_unique<SpanData>());
  EXPECT_EQ(e.stats().dropped, 6u);
  e.Stop();  // exports what is queued: no endpoint, so dropped as well
  EXPECT_EQ(e.stats().dropped, 10u);
  e.Enqueue(std::make_unique<SpanData>());
  EXPECT_EQ(e.stats().dropped, 11u);
  EXPECT_EQ(e.stats().exported, 0u);
}

// Threads enqueue while the exporter drains in batches, then it stops: every span is either
// exported or counted as dropped, exactly once (run under TSan in CI: the queue hand-over and
// the stop's wake-up are the exporter's concurrency).
TEST(ExporterTest, ConcurrentEnqueueDrainAndStop) {
  TracingConfig c;
  c.queue_size = 256;
  c.batch_size = 32;
  c.batch_timeout = 1;
  BatchExporter e(c, "svc");  // no endpoint: every batch is dropped, counted
  std::string err;
  ASSERT_TRUE(e.Start(&err));
  constexpr int kThreads = 4;
  constexpr int kSpans = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&e] {
      for (int i = 0; i < kSpans; ++i) {
        auto s = std::make_unique<SpanData>();
        s->name = "n";
        e.Enqueue(std::move(s));
      }
    });
  }
  for (auto& t : threads) t.join();
  e.Stop();  // the exporter may still be draining: the stop exports (drops) the rest
  const BatchExporter::Stats st = e.stats();
  EXPECT_EQ(st.exported + st.dropped, uint64_t{kThreads} * kSpans);
}

}  // namespace
}  // namespace trpc::tracing::detail
