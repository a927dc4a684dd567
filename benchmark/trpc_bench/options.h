#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trpc {
class TlsContext;
}

namespace trpc::bench {

/// trpc_bench's command line, parsed and checked. A value type; read-only once the run starts
/// (every thread reads it).
struct Options {
  std::string target = "127.0.0.1:12345";
  std::string protocol = "trpc";  // "trpc", "grpc" or "http"
  // trpc and grpc; with --stream the default is kDefaultStreamFunc.
  std::string func = "/trpc.test.helloworld.Greeter/SayHello";
  std::string http_method = "GET";  // http only
  std::string http_path = "/";      // http only: the request-target (path and query)
  int connections = 100;
  int inflight = 1;        // calls outstanding per connection at most
  double qps = 0;          // 0 = closed loop
  double duration_s = 10;  // 0 = no time limit (only with --requests)
  uint64_t requests = 0;   // measured requests to make; 0 = no count limit
  double warmup_s = 1;
  int threads = 1;
  std::vector<int> cpus;  // thread i runs on cpus[i % size]; empty = not pinned
  int timeout_ms = 1000;
  size_t payload_size = 10;
  std::string payload_file;
  std::string payload;  // the bytes sent: payload_size 'x's or the file's contents (main fills)
  double tail_ratio = 0;
  int64_t tail_delay_us = 0;
  std::string tail_kind = "sleep";
  // One hot connection (the first of thread 0) carries this share of all calls; 0 = off.
  double hot_share = 0;
  // Calls outstanding on the hot connection at most. By Little's law a connection carries at
  // most inflight / latency calls per second: 64 lets it carry 200k/s at 320 us, the shares an
  // 8-worker server sees at P999 <= 10 ms, and stays below the servers' per-connection limits
  // (max_pending_requests 1024, gRPC's 100 concurrent streams).
  int hot_inflight = 64;
  // --stream: each connection carries `streams_per_connection` bidirectional streams of `func`,
  // each with one message in flight (write, read its echo, write the next); a request is one
  // message's round trip.
  bool stream = false;
  int streams_per_connection = 1;
  int server_pid = 0;
  std::string json_path;  // "" = none, "-" = stdout
  bool quiet = false;
  // --tls: TLS to the server (any protocol), trusting --tls-ca (else the system's CAs, or
  // nothing with --tls-insecure), presenting --tls-cert/--tls-key when given.
  bool tls = false;
  std::string tls_ca;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_sni;
  bool tls_insecure = false;
  std::shared_ptr<TlsContext> tls_context;  // made from the above (main fills)

  bool open_loop() const { return qps > 0; }
  bool http() const { return protocol == "http"; }
  /// http: the request carries the payload as its body (POST, PUT and PATCH do).
  bool http_body() const {
    return http_method == "POST" || http_method == "PUT" || http_method == "PATCH";
  }
  bool tail_on() const { return tail_ratio > 0; }
  bool hot_on() const { return hot_share > 0; }
  /// "/pkg.Service/Method" -> "pkg.Service" (the request header's callee).
  std::string Callee() const;
};

/// The method --stream calls unless --func names another: examples/helloworld's echo.
inline constexpr char kDefaultStreamFunc[] = "/trpc.test.helloworld.Greeter/BidiStream";

enum class ParseResult { kRun, kHelp, kBadUsage };

/// Parses argv into `*o`. kBadUsage comes with a one-line reason in `*err`.
ParseResult ParseOptions(int argc, char** argv, Options* o, std::string* err);

/// The --help text.
std::string UsageText(const char* argv0);

/// "5ms", "500us", "1s", "2.5ms" -> microseconds. False on anything else (a unit is required).
bool ParseDurationUs(std::string_view text, int64_t* us);

}  // namespace trpc::bench
