#include "trpc/admin/detail/admin_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>

#include "trpc/admin/admin.h"
#include "trpc/admin/detail/admin_token.h"
#include "trpc/admin/detail/process_metrics.h"
#include "trpc/admin/detail/prometheus_text.h"
#include "trpc/admin/detail/stats_json.h"
#include "trpc/base/detail/version.h"
#include "trpc/base/logging.h"
#include "trpc/codec/http/detail/http_codec.h"
#include "trpc/server/server.h"
#include "trpc/transport/tls_context.h"

namespace trpc::admin {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr int kDefaultProfileSeconds = 10;
constexpr int kMaxProfileSeconds = 60;

constexpr std::string_view kIndex =
    "tRPC admin\n"
    "  GET /health                       200 SERVING while the server takes calls, else 503\n"
    "  GET /metrics                      Prometheus text exposition\n"
    "  GET /cmds/stats                   the same numbers as JSON\n"
    "  GET /version                      framework version, build type, commit\n"
    "  GET /cmds/loglevel                the log level\n"
    "  PUT /cmds/loglevel                set it: {\"level\":\"debug\"} or debug\n"
    "  GET /cmds/profile/cpu?seconds=N   a CPU profile for google-pprof (N 1..60, default 10)\n"
    "  POST /cmds/reload-tls             load the TLS certificate and key files again\n";

void JsonError(http::HttpResponse* rsp, int status, std::string_view message) {
  rsp->set_status(status);
  rsp->SetBody("{\"error\":" + JsonString(message) + "}\n", std::string(kJson));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

// The level named by a PUT body: `{"level": "debug"}` (that one member) or plain `debug`.
bool LevelFromBody(std::string_view body, std::string* name) {
  body = Trim(body);
  if (body.empty() || body.front() != '{') {
    *name = std::string(body);
    return !body.empty();
  }
  if (body.back() != '}') return false;
  body = Trim(body.substr(1, body.size() - 2));
  constexpr std::string_view kKey = "\"level\"";
  if (!body.starts_with(kKey)) return false;
  body = Trim(body.substr(kKey.size()));
  if (body.empty() || body.front() != ':') return false;
  body = Trim(body.substr(1));
  if (body.size() < 2 || body.front() != '"' || body.back() != '"') return false;
  body = body.substr(1, body.size() - 2);
  if (body.find_first_of("\"\\") != std::string_view::npos) return false;
  *name = std::string(body);
  return true;
}

bool IsNumericAddress(const std::string& name) {
  in6_addr a6;
  in_addr a4;
  return ::inet_pton(AF_INET, name.c_str(), &a4) == 1 ||
         ::inet_pton(AF_INET6, name.c_str(), &a6) == 1;
}

bool IsLoopbackAddress(const std::string& ip) {
  NetAddress a;
  return NetAddress::FromIpPort(ip, 0, &a) && a.IsLoopback();
}

}  // namespace

bool HostAllowed(std::string_view host, const std::vector<std::string>& allowed) {
  host = Trim(host);
  std::string name;
  if (!host.empty() && host.front() == '[') {
    const size_t end = host.find(']');
    if (end == std::string_view::npos) return false;
    name = std::string(host.substr(1, end - 1));
  } else {
    const size_t colon = host.find(':');
    name = std::string(host.substr(0, colon));
  }
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!name.empty() && name.back() == '.') name.pop_back();  // "localhost." is localhost
  if (name.empty()) return false;
  if (name == "localhost" || name.ends_with(".localhost") || IsNumericAddress(name)) return true;
  return std::any_of(allowed.begin(), allowed.end(),
                     [&](const std::string& a) { return a == "*" || a == name; });
}

AdminService::AdminService(const Server* server, std::vector<std::string> allowed_hosts,
                           std::shared_ptr<AdminToken> token)
    : server_(server), token_(std::move(token)) {
  using http::HttpRequest;
  using http::HttpResponse;
  CheckHost([allowed = std::move(allowed_hosts)](std::string_view host) {
    return HostAllowed(host, allowed);
  });
  // /health stays open: load balancers' health checks often cannot send a header, and it
  // tells no more than whether the port answers.
  if (token_) {
    RequireBearerToken([t = token_](std::string_view token) { return t->Accept(token); },
                       {"/health"});
  }
  Get("/", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    rsp->SetBody(std::string(kIndex), "text/plain; charset=utf-8");
  });
  // For HTTP health checkers (load balancers, orchestrators): 200 while the server takes
  // calls, 503 before and while it stops; the same as grpc.health.v1's overall status.
  Get("/health", [this](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    bool serving = server_->readiness() == Server::Readiness::kServing;
    rsp->set_status(serving ? 200 : 503);
    rsp->SetBody(serving ? "SERVING\n" : "NOT_SERVING\n", "text/plain; charset=utf-8");
  });
  Get("/metrics",
      [this](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) { Metrics(rsp); });
  Get("/cmds/stats",
      [this](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) { Stats(rsp); });
  Get("/version", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    rsp->SetBody("{\"version\":" + JsonString(Version()) + ",\"build_type\":" +
                     JsonString(BuildType()) + ",\"commit\":" + JsonString(BuildCommit()) + "}\n",
                 std::string(kJson));
  });
  Get("/cmds/loglevel", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    rsp->SetBody("{\"level\":" + JsonString(log::LevelName(log::GetLevel())) + "}\n",
                 std::string(kJson));
  });
  Put("/cmds/loglevel", [this](const ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
    SetLogLevel(req, rsp);
  });
  // As SIGHUP: new connections get the files' current certificates; a bad file keeps the old.
  Post("/cmds/reload-tls", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    std::string errors;
    size_t ok = 0;
    for (const auto& c : TlsContext::All()) {
      std::string err;
      if (c->Reload(&err)) {
        ++ok;
      } else {
        TRPC_LOG_ERROR("admin: TLS reload refused, the previous certificate stays: {}", err);
        errors += (errors.empty() ? "" : ",") + JsonString(err);
      }
    }
    rsp->set_status(errors.empty() ? 200 : 500);
    rsp->SetBody(fmt::format("{{\"reloaded\":{},\"errors\":[{}]}}\n", ok, errors),
                 std::string(kJson));
  });
  Get("/cmds/profile/cpu", [this](const ServerContextPtr& ctx, const HttpRequest& req,
                                  HttpResponse* rsp) { Profile(ctx, req, rsp); });
}

AdminService::~AdminService() { profiler_.Stop(); }

void AdminService::Stop() { profiler_.Stop(); }

void AdminService::Metrics(http::HttpResponse* rsp) const {
  ProcessMetrics process;
  bool have_process = ReadProcessMetrics(&process);
  std::string text = PrometheusText(server_->GetMetrics(), have_process ? &process : nullptr,
                                    CollectClientMetrics(), server_->config().admin_grpc_metrics);
  if (token_) {
    text += fmt::format(
        "# HELP trpc_admin_auth_failures_total Admin requests refused for a missing or wrong "
        "bearer token.\n# TYPE trpc_admin_auth_failures_total counter\n"
        "trpc_admin_auth_failures_total {}\n",
        token_->failures());
  }
  rsp->SetBody(std::move(text), std::string(kPrometheusContentType));
}

void AdminService::Stats(http::HttpResponse* rsp) const {
  ProcessMetrics process;
  bool have_process = ReadProcessMetrics(&process);
  rsp->SetBody(
      StatsJson(server_->GetMetrics(), have_process ? &process : nullptr, CollectClientMetrics()),
      std::string(kJson));
}

void AdminService::SetLogLevel(const http::HttpRequest& req, http::HttpResponse* rsp) const {
  std::string name;
  log::Level level;
  if (!LevelFromBody(req.body(), &name) || !log::ParseLevel(name, &level)) {
    JsonError(rsp, 400,
              "expected {\"level\":\"L\"} or L, with L one of trace, debug, info, warn, error, "
              "fatal, off");
    return;
  }
  std::string_view previous = log::LevelName(log::GetLevel());
  log::SetLevel(level);
  TRPC_LOG_INFO("admin: log level {} -> {}", previous, log::LevelName(level));
  rsp->SetBody("{\"level\":" + JsonString(log::LevelName(level)) +
                   ",\"previous\":" + JsonString(previous) + "}\n",
               std::string(kJson));
}

void AdminService::Profile(const ServerContextPtr& ctx, const http::HttpRequest& req,
                           http::HttpResponse* rsp) {
  int seconds = kDefaultProfileSeconds;
  if (std::string_view q = req.QueryParam("seconds"); !q.empty()) {
    auto [end, ec] = std::from_chars(q.data(), q.data() + q.size(), seconds);
    if (ec != std::errc() || end != q.data() + q.size() || seconds < 1 ||
        seconds > kMaxProfileSeconds) {
      JsonError(rsp, 400, "seconds must be an integer in 1..60");
      return;
    }
  }
  // The reply comes from the profile's thread, seconds later; the admin thread goes on serving.
  ctx->SetResponse(false);
  std::string err;
  CpuProfiler::StartResult r = profiler_.Start(
      seconds,
      [ctx](bool ok, std::string bytes_or_error) {
        auto out = std::make_unique<http::HttpResponse>();
        if (ok) {
          out->AddHeader("Content-Disposition", "attachment; filename=\"cpu.prof\"");
          out->SetBody(std::move(bytes_or_error), "application/octet-stream");
        } else {
          JsonError(out.get(), 503, bytes_or_error);
        }
        ctx->SetProtocolResponse(std::move(out));
        ctx->SendUnaryResponse(Status());
      },
      &err);
  if (r == CpuProfiler::StartResult::kStarted) return;
  ctx->SetResponse(true);  // answered now, by the framework
  switch (r) {
    case CpuProfiler::StartResult::kBusy:
      JsonError(rsp, 409, "a CPU profile is already running; try again when it ends");
      break;
    case CpuProfiler::StartResult::kStopped:
      JsonError(rsp, 503, err);
      break;
    case CpuProfiler::StartResult::kUnavailable:
      JsonError(rsp, 501, "this build has no CPU profiler (gperftools' libprofiler)");
      break;
    default:
      JsonError(rsp, 500, err);
  }
}

}  // namespace trpc::admin

namespace trpc::admin {

bool EnableAdmin(Server* server, std::string* err) {
  const ServerConfig& c = server->config();
  if (!c.admin_enabled()) return true;
  return EnableAdmin(server, c.admin_ip, c.admin_port_auto ? 0 : c.admin_port, err);
}

bool EnableAdmin(Server* server, std::string ip, uint16_t port, std::string* err) {
  std::string ignored;
  if (err == nullptr) err = &ignored;
  const ServerConfig& c = server->config();
  const std::string at = c.origin.empty() ? "" : c.origin + ": ";
  ServerConfig bound = c;  // the config's authentication on the address asked for
  bound.admin_ip = ip;
  bound.admin_port = port == 0 ? 1 : port;  // enabled, whatever the config's port
  if (bound.admin_unauthenticated_beyond_loopback()) {
    *err = at + "server.admin_ip: " + AdminUnauthenticatedRefusal(ip);
    TRPC_LOG_ERROR("{}", *err);
    return false;
  }
  if (!IsLoopbackAddress(ip) && c.admin_allow_unauthenticated && !c.admin_ssl.enable &&
      c.admin_token.empty() && c.admin_token_file.empty()) {
    TRPC_LOG_WARN(
        "admin service on {}: beyond loopback with no authentication, as "
        "server.admin_allow_unauthenticated says: anyone who can reach this address can read "
        "the metrics, change the log level and take CPU profiles",
        ip);
  }
  // (The config loader checks these with their lines; a program's own ServerConfig gets the
  // same checks here.)
  if (!c.admin_token.empty() && !c.admin_token_file.empty()) {
    *err = at + "server.admin_token_file: set admin_token or admin_token_file, not both";
    TRPC_LOG_ERROR("{}", *err);
    return false;
  }
  if (std::string why = AdminTokenProblem(c.admin_token); !c.admin_token.empty() && !why.empty()) {
    *err = at + "server.admin_token: " + why;
    TRPC_LOG_ERROR("{}", *err);
    return false;
  }
  if (!IsLoopbackAddress(ip) && c.admin_ssl.enable && !c.admin_ssl.mutual_auth &&
      c.admin_token.empty() && c.admin_token_file.empty()) {
    TRPC_LOG_WARN(
        "admin service on {}: beyond loopback with TLS but neither client certificates "
        "(admin_ssl.mutual_auth) nor a token: the traffic is encrypted, but anyone who can "
        "reach this address can still use it",
        ip);
  }
  std::shared_ptr<AdminToken> token;
  if (!c.admin_token.empty()) {
    token = std::make_shared<AdminToken>(c.admin_token);
  } else if (!c.admin_token_file.empty()) {
    std::string why;
    token = AdminToken::FromFile(
        c.admin_token_file,
        c.admin_token_file_origin.empty() ? c.origin : c.admin_token_file_origin, &why);
    if (!token) {
      *err = why;
      TRPC_LOG_ERROR("{}", *err);
      return false;
    }
  }
  auto svc = std::make_shared<AdminService>(server, c.admin_allowed_hosts, token);
  SideService side;
  side.config.name = kAdminServiceName;
  side.config.threadmodel_instance_name = "trpc_admin";
  side.config.protocol = std::string(http::kHttpCodecName);
  side.config.ip = std::move(ip);
  side.config.port = port;
  side.config.ssl = c.admin_ssl;
  // A few operators and scrapers, small requests; no timeout: a CPU profile takes seconds.
  side.config.max_conn_num = kMaxConnections;
  side.config.max_packet_size = kMaxPacketSize;
  side.config.timeout = 0;
  // A silent connection goes at the HTTP header timeout, not at idle_time; and a table full of
  // idle or silent connections makes room for a new one, so /health stays reachable.
  side.silent_timeout_ms = static_cast<uint32_t>(http::HttpServerOptions{}.header_timeout_ms);
  side.evict_idle_when_full = true;
  side.service = svc;
  side.before_stop = [svc] { svc->Stop(); };
  if (!server->AddSideService(std::move(side))) {
    *err = "the server has an admin service already";
    return false;
  }
  return true;
}

bool GetAdminAddress(const Server& server, NetAddress* out) {
  return server.GetAddress(kAdminServiceName, out);
}

}  // namespace trpc::admin
