// HTTP/1.1 request parser micro-benchmarks: the parser alone on bytes already in a ChainBuffer
// (no sockets, one thread), as a connection would see them after one read. One item = one
// request; time per item is the parse cost per request.
#include <benchmark/benchmark.h>

#include <string>

#include "trpc/codec/http/detail/request_parser.h"

namespace trpc::http::detail {
namespace {

// What wrk sends by default.
constexpr char kWrkGet[] = "GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n";

// A browser's navigation request: 10 header fields, some long.
constexpr char kBrowserGet[] =
    "GET /static/app/index.html?lang=en&v=3 HTTP/1.1\r\n"
    "Host: www.example.com\r\n"
    "User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0\r\n"
    "Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8\r\n"
    "Accept-Language: en-US,en;q=0.5\r\n"
    "Accept-Encoding: gzip, deflate, br\r\n"
    "Referer: https://www.example.com/\r\n"
    "Connection: keep-alive\r\n"
    "Cookie: session=8f14e45fceea167a5a36dedd4bea2543; theme=dark\r\n"
    "Upgrade-Insecure-Requests: 1\r\n"
    "Cache-Control: max-age=0\r\n"
    "\r\n";

constexpr char kChunkedPost[] =
    "POST /upload HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nTransfer-Encoding: chunked\r\n\r\n"
    "10\r\n0123456789abcdef\r\n10\r\n0123456789abcdef\r\n0\r\n\r\n";

// Parses the one request in `req` over and over; the head is rebuilt each time (Reset keeps
// capacity), as it is for each request on a keep-alive connection.
void ParseOneRequest(benchmark::State& state, const char* req) {
  ChainBuffer in;
  in.Append(req);
  RequestParser parser;
  for (auto _ : state) {
    if (parser.Parse(in) != RequestParser::Result::kComplete) {
      state.SkipWithError("request did not parse");
      break;
    }
    benchmark::DoNotOptimize(parser.head().path.data());
    parser.Reset();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * in.size()));
}

void BM_WrkGet(benchmark::State& state) { ParseOneRequest(state, kWrkGet); }
BENCHMARK(BM_WrkGet);

void BM_BrowserGet(benchmark::State& state) { ParseOneRequest(state, kBrowserGet); }
BENCHMARK(BM_BrowserGet);

void BM_ChunkedPost(benchmark::State& state) { ParseOneRequest(state, kChunkedPost); }
BENCHMARK(BM_ChunkedPost);

// 16 wrk GETs in one read, as a pipelining client sends them: Parse, cut wire_size, Reset, for
// each. The buffer is a shared view of the same bytes each round (no copy).
void BM_Pipelined16WrkGets(benchmark::State& state) {
  constexpr int kDepth = 16;
  ChainBuffer all;
  for (int i = 0; i < kDepth; ++i) all.Append(kWrkGet);
  RequestParser parser;
  for (auto _ : state) {
    ChainBuffer in = all.Clone();
    for (int i = 0; i < kDepth; ++i) {
      if (parser.Parse(in) != RequestParser::Result::kComplete) {
        state.SkipWithError("request did not parse");
        return;
      }
      benchmark::DoNotOptimize(parser.head().path.data());
      in.Skip(parser.wire_size());
      parser.Reset();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kDepth);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * all.size()));
  state.SetLabel("1 item = 1 of the 16 requests");
}
BENCHMARK(BM_Pipelined16WrkGets);

}  // namespace
}  // namespace trpc::http::detail

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("wrk_get_bytes",
                              std::to_string(sizeof(trpc::http::detail::kWrkGet) - 1));
  benchmark::AddCustomContext("browser_get_bytes",
                              std::to_string(sizeof(trpc::http::detail::kBrowserGet) - 1));
#ifdef NDEBUG
  benchmark::AddCustomContext("trpc_build", "NDEBUG");
#else
  benchmark::AddCustomContext("trpc_build", "debug (asserts on): numbers not representative");
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
