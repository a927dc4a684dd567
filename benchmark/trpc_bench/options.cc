#include "benchmark/trpc_bench/options.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "fmt/format.h"
#include "trpc/base/net_address.h"

namespace trpc::bench {

namespace {

// Strict numbers: the whole text must be the number (atoi would take "10x" as 10).
bool ParseInt(std::string_view text, int64_t min, int64_t max, int64_t* out) {
  std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseDouble(std::string_view text, double min, double max, double* out) {
  std::string s(text);
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(v) || v < min || v > max) return false;
  *out = v;
  return true;
}

bool ParseCpus(std::string_view text, std::vector<int>* cpus) {
  cpus->clear();
  long ncpu = sysconf(_SC_NPROCESSORS_CONF);
  while (true) {
    size_t comma = text.find(',');
    int64_t cpu = 0;
    if (!ParseInt(text.substr(0, comma), 0, std::min<long>(ncpu, CPU_SETSIZE) - 1, &cpu)) {
      return false;
    }
    cpus->push_back(static_cast<int>(cpu));
    if (comma == std::string_view::npos) return true;
    text.remove_prefix(comma + 1);
  }
}

}  // namespace

std::string Options::Callee() const {
  size_t last = func.rfind('/');
  return func.substr(1, last - 1);
}

bool ParseDurationUs(std::string_view text, int64_t* us) {
  struct Unit {
    std::string_view suffix;
    double us;
  };
  // "ms" before "s": "5ms" also ends in "s".
  static constexpr Unit kUnits[] = {{"us", 1}, {"ms", 1e3}, {"s", 1e6}};
  for (const Unit& u : kUnits) {
    if (text.size() > u.suffix.size() && text.ends_with(u.suffix)) {
      double v = 0;
      if (!ParseDouble(text.substr(0, text.size() - u.suffix.size()), 0, 3600, &v)) return false;
      *us = std::llround(v * u.us);
      return true;
    }
  }
  return false;
}

std::string UsageText(const char* argv0) {
  return fmt::format(
      R"(usage: {} [options]
A load client for trpc and HTTP/1.1 servers: closed loop (--connections x --inflight) or open
loop at a fixed rate (--qps) with coordinated-omission correction. See
benchmark/trpc_bench/README.md.

  --target IP:PORT        server (default 127.0.0.1:12345)
  --protocol P            trpc (default), grpc (unary gRPC over h2c: each connection carries
                          --inflight concurrent streams) or http (HTTP/1.1)
  --func /pkg.Svc/Method  trpc, grpc: method to call (default /trpc.test.helloworld.Greeter/SayHello);
                          the body is a trpc.test.helloworld.HelloRequest carrying the payload
  --http-method M         http: GET (default), HEAD, POST, PUT, DELETE, PATCH or OPTIONS;
                          POST, PUT and PATCH send the payload as the body
  --http-path PATH        http: the request-target, e.g. /hello?x=1 (default /)
  --connections N         connections, spread over the threads (default 100)
  --inflight N            calls outstanding per connection at most (default 1); over http,
                          the pipelining depth
  --qps R                 open loop: R requests/s in total on a constant-rate plan; latency
                          counts from each request's intended send time (0 = closed loop)
  --duration S            measured seconds (default 10; 0 = no limit, needs --requests)
  --requests N            stop after N measured requests
  --warmup S              seconds before measuring, not counted (default 1)
  --threads N             threads, each with its own reactor and share of the connections and
                          of the rate (default 1)
  --cpus C,C,...          pin thread i to the i-th CPU of the list (cyclically)
  --timeout MS            per-call timeout (default 1000), also the caller's deadline: in
                          the open loop a reply counts toward goodput only if it is OK within
                          MS of its intended send time, and a request still unsent MS after
                          it is dropped as a timeout
  --payload-size BYTES    payload bytes (default 10)
  --payload-file PATH     payload from a file (trpc: UTF-8, as it is a proto3 string)
  --tail-ratio F          tag this fraction of requests (deterministically) so that the server
                          delays them; they are reported apart (trpc: trans_info
                          trpc-bench-tail; http: header X-Trpc-Bench-Tail)
  --tail-delay DUR        server-side delay of a tagged request: 5ms, 500us, 1s
  --tail-kind sleep|spin  how the server spends the delay (default sleep)
  --hot-share F           one connection (the first of thread 0) carries this share of all
                          requests, in [0, 1); the rest go to the other connections as usual
                          (default 0: off). Open loop: a plan of its own at F x --qps; closed
                          loop: the other connections wait when they run ahead of the share
  --hot-inflight N        calls outstanding on the hot connection at most (default 64); over
                          http, its pipelining depth
  --stream                trpc, grpc: a bidirectional streaming echo instead of unary calls,
                          --func default {};
                          a request is one message's round trip. Closed loop: each stream has
                          one message in flight (write, read its echo, write the next); --qps:
                          each message is written at its intended time on the next stream
  --streams-per-connection N
                          --stream: streams on each connection, 1..1000 (default 1)
  --server-pid PID        report the server's CPU time per request from /proc/PID/stat
  --json PATH             write the result as JSON to PATH ("-" = stdout; the human-readable
                          report then goes to stderr)
  --quiet                 no per-second progress lines
  --tls                   TLS to the server (any protocol; gRPC offers ALPN h2)
  --tls-ca FILE           with --tls: the CAs (PEM) the server's certificate chains to (default:
                          the system's); the certificate must name the target's IP or --tls-sni
  --tls-cert FILE         with --tls: a client certificate (PEM) to present, and
  --tls-key FILE          its private key
  --tls-sni NAME          with --tls: the server name sent and checked
  --tls-insecure          with --tls: do not verify the server's certificate
  --help                  this text

Exit status: 0 if it ran (even with errors), 2 on bad usage, 1 if it could not connect.
)",
      argv0, kDefaultStreamFunc);
}

ParseResult ParseOptions(int argc, char** argv, Options* o, std::string* err) {
  bool duration_given = false;
  bool func_given = false;
  bool http_given = false;
  bool hot_inflight_given = false;
  bool inflight_given = false;
  bool streams_given = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view name = argv[i];
    if (name == "--help" || name == "-h") return ParseResult::kHelp;
    if (name == "--quiet") {
      o->quiet = true;
      continue;
    }
    if (name == "--stream") {
      o->stream = true;
      continue;
    }
    if (name == "--tls") {
      o->tls = true;
      continue;
    }
    if (name == "--tls-insecure") {
      o->tls_insecure = true;
      continue;
    }
    // "--name value" or "--name=value".
    std::string_view value;
    if (size_t eq = name.find('='); name.starts_with("--") && eq != std::string_view::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *err = fmt::format("{} needs a value", name);
      return ParseResult::kBadUsage;
    }
    int64_t n = 0;
    bool ok = true;
    if (name == "--target") {
      o->target = value;
    } else if (name == "--protocol") {
      o->protocol = value;
    } else if (name == "--func") {
      o->func = value;
      func_given = true;
    } else if (name == "--http-method") {
      o->http_method = value;
      http_given = true;
      ok = value == "GET" || value == "HEAD" || value == "POST" || value == "PUT" ||
           value == "DELETE" || value == "PATCH" || value == "OPTIONS";
    } else if (name == "--http-path") {
      o->http_path = value;
      http_given = true;
      // A request-target: printable ASCII without spaces, starting with '/'.
      ok = value.starts_with('/') &&
           std::all_of(value.begin(), value.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    } else if (name == "--connections") {
      ok = ParseInt(value, 1, 1'000'000, &n);
      o->connections = static_cast<int>(n);
    } else if (name == "--inflight") {
      ok = ParseInt(value, 1, 1'000'000, &n);
      o->inflight = static_cast<int>(n);
      inflight_given = true;
    } else if (name == "--qps") {
      ok = ParseDouble(value, 0, 1e9, &o->qps);
    } else if (name == "--duration") {
      ok = ParseDouble(value, 0, 1e6, &o->duration_s);
      duration_given = true;
    } else if (name == "--requests") {
      ok = ParseInt(value, 0, INT64_MAX, &n);
      o->requests = static_cast<uint64_t>(n);
    } else if (name == "--warmup") {
      ok = ParseDouble(value, 0, 1e6, &o->warmup_s);
    } else if (name == "--threads") {
      ok = ParseInt(value, 1, 1024, &n);
      o->threads = static_cast<int>(n);
    } else if (name == "--cpus") {
      ok = ParseCpus(value, &o->cpus);
    } else if (name == "--timeout") {
      ok = ParseInt(value, 1, 3'600'000, &n);
      o->timeout_ms = static_cast<int>(n);
    } else if (name == "--payload-size") {
      ok = ParseInt(value, 0, 64 << 20, &n);
      o->payload_size = static_cast<size_t>(n);
    } else if (name == "--payload-file") {
      o->payload_file = value;
    } else if (name == "--tail-ratio") {
      ok = ParseDouble(value, 0, 1, &o->tail_ratio);
    } else if (name == "--tail-delay") {
      if (!ParseDurationUs(value, &o->tail_delay_us)) {
        *err = fmt::format("bad value for --tail-delay: '{}' (give a unit: 5ms, 500us, 1s)", value);
        return ParseResult::kBadUsage;
      }
    } else if (name == "--tail-kind") {
      o->tail_kind = value;
      ok = value == "sleep" || value == "spin";
    } else if (name == "--hot-share") {
      if (!ParseDouble(value, 0, 1, &o->hot_share) || o->hot_share >= 1) {
        *err = fmt::format("--hot-share {}: expected a share in [0, 1), e.g. 0.5", value);
        return ParseResult::kBadUsage;
      }
    } else if (name == "--hot-inflight") {
      ok = ParseInt(value, 1, 1'000'000, &n);
      o->hot_inflight = static_cast<int>(n);
      hot_inflight_given = true;
    } else if (name == "--streams-per-connection") {
      // ClientStreams carries at most 1000 of a connection's streams.
      ok = ParseInt(value, 1, 1000, &n);
      o->streams_per_connection = static_cast<int>(n);
      streams_given = true;
    } else if (name == "--server-pid") {
      ok = ParseInt(value, 1, INT32_MAX, &n);
      o->server_pid = static_cast<int>(n);
    } else if (name == "--tls-ca") {
      o->tls_ca = value;
    } else if (name == "--tls-cert") {
      o->tls_cert = value;
    } else if (name == "--tls-key") {
      o->tls_key = value;
    } else if (name == "--tls-sni") {
      o->tls_sni = value;
    } else if (name == "--json") {
      o->json_path = value;
      ok = !value.empty();
    } else {
      *err = fmt::format("unknown option {}", name);
      return ParseResult::kBadUsage;
    }
    if (!ok) {
      *err = fmt::format("bad value for {}: '{}'", name, value);
      return ParseResult::kBadUsage;
    }
  }

  auto bad = [&](std::string reason) {
    *err = std::move(reason);
    return ParseResult::kBadUsage;
  };
  if (!o->tls && (!o->tls_ca.empty() || !o->tls_cert.empty() || !o->tls_key.empty() ||
                  !o->tls_sni.empty() || o->tls_insecure)) {
    return bad("--tls-ca, --tls-cert, --tls-key, --tls-sni and --tls-insecure need --tls");
  }
  if (o->tls_cert.empty() != o->tls_key.empty()) {
    return bad("--tls-cert and --tls-key go together");
  }
  if (o->protocol != "trpc" && o->protocol != "http" && o->protocol != "grpc") {
    return bad(fmt::format("--protocol {}: not supported (trpc, grpc or http)", o->protocol));
  }
  if (http_given && !o->http()) return bad("--http-method and --http-path need --protocol http");
  if (func_given && o->http()) {
    return bad("--func is for --protocol trpc or grpc (http: --http-path)");
  }
  if (o->stream) {
    if (o->http()) return bad("--stream needs --protocol trpc or grpc");
    if (!func_given) o->func = kDefaultStreamFunc;
    // One message in flight per stream; more concurrency is more streams.
    if (inflight_given) {
      return bad("--inflight is for unary calls; with --stream use --streams-per-connection");
    }
    if (o->tail_on()) return bad("--tail-ratio is for unary calls, not --stream");
    if (o->hot_on()) return bad("--hot-share is for unary calls, not --stream");
  } else if (streams_given) {
    return bad("--streams-per-connection needs --stream");
  }
  NetAddress addr;
  if (!NetAddress::Parse(o->target, &addr)) {
    return bad(fmt::format("--target {}: expected IP:PORT", o->target));
  }
  if (o->func.size() < 4 || o->func[0] != '/' || o->func.rfind('/') <= 1 || o->func.back() == '/') {
    return bad(fmt::format("--func {}: expected /package.Service/Method", o->func));
  }
  // --requests alone runs until the count; both: whichever comes first.
  if (o->requests > 0 && !duration_given) o->duration_s = 0;
  if (o->duration_s == 0 && o->requests == 0) {
    return bad("give a --duration above 0 or a --requests count");
  }
  if (o->threads > o->connections) {
    return bad(fmt::format("--threads {} exceeds --connections {}: each thread needs one",
                           o->threads, o->connections));
  }
  if (o->tail_on() && o->tail_delay_us <= 0) {
    return bad("--tail-ratio needs a --tail-delay with a unit, e.g. 5ms or 500us");
  }
  if (hot_inflight_given && !o->hot_on()) {
    return bad(fmt::format("--hot-inflight {}: needs a --hot-share above 0", o->hot_inflight));
  }
  if (o->hot_on()) {
    // The hot connection is one of --connections, the first of thread 0; every thread, thread
    // 0 included, needs another one for its share of the rest.
    if (o->connections < 2 || o->connections <= o->threads) {
      return bad(fmt::format(
          "--hot-share {}: needs at least 2 connections and more --connections ({}) than "
          "--threads ({}): the hot connection is one of them, and every thread needs another",
          o->hot_share, o->connections, o->threads));
    }
  }
  return ParseResult::kRun;
}

}  // namespace trpc::bench
