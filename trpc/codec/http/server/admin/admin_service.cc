#include "trpc/codec/http/server/admin/admin_service.h"

#include <charconv>
#include <string>
#include <string_view>

#include "trpc/base/logging.h"
#include "trpc/base/version.h"
#include "trpc/codec/http/http_codec.h"
#include "trpc/codec/http/server/admin/process_metrics.h"
#include "trpc/codec/http/server/admin/prometheus_text.h"
#include "trpc/codec/http/server/admin/stats_json.h"
#include "trpc/server/detail/admin_plugin.h"
#include "trpc/server/server.h"

namespace trpc::admin {

namespace {

constexpr std::string_view kJson = "application/json";
constexpr int kDefaultProfileSeconds = 10;
constexpr int kMaxProfileSeconds = 60;

constexpr std::string_view kIndex =
    "tRPC admin\n"
    "  GET /metrics                      Prometheus text exposition\n"
    "  GET /cmds/stats                   the same numbers as JSON\n"
    "  GET /version                      framework version, build type, commit\n"
    "  GET /cmds/loglevel                the log level\n"
    "  PUT /cmds/loglevel                set it: {\"level\":\"debug\"} or debug\n"
    "  GET /cmds/profile/cpu?seconds=N   a CPU profile for google-pprof (N 1..60, default 10)\n";

void JsonError(http::HttpResponse* rsp, int status, std::string_view message) {
  rsp->set_status(status);
  rsp->SetBody("{\"error\":" + JsonString(message) + "}\n", std::string(kJson));
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' ||
                        s.front() == '\n')) {
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

detail::AdminEndpoint MakeAdmin(Server* server) {
  auto svc = std::make_shared<AdminService>(server);
  return {svc, std::string(http::kHttpCodecName), [svc] { svc->Stop(); }};
}

// Registers the admin service with the server (detail/admin_plugin.h) when the library is linked.
[[maybe_unused]] const bool kRegistered = (detail::SetAdminFactory(&MakeAdmin), true);

}  // namespace

AdminService::AdminService(const Server* server) : server_(server) {
  using http::HttpRequest;
  using http::HttpResponse;
  Get("/", [](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    rsp->SetBody(std::string(kIndex), "text/plain; charset=utf-8");
  });
  Get("/metrics", [this](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    Metrics(rsp);
  });
  Get("/cmds/stats", [this](const ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
    Stats(rsp);
  });
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
  Get("/cmds/profile/cpu",
      [this](const ServerContextPtr& ctx, const HttpRequest& req, HttpResponse* rsp) {
        Profile(ctx, req, rsp);
      });
}

AdminService::~AdminService() { profiler_.Stop(); }

void AdminService::Stop() { profiler_.Stop(); }

void AdminService::Metrics(http::HttpResponse* rsp) const {
  ProcessMetrics process;
  bool have_process = ReadProcessMetrics(&process);
  rsp->SetBody(PrometheusText(server_->GetMetrics(), have_process ? &process : nullptr),
               std::string(kPrometheusContentType));
}

void AdminService::Stats(http::HttpResponse* rsp) const {
  ProcessMetrics process;
  bool have_process = ReadProcessMetrics(&process);
  rsp->SetBody(StatsJson(server_->GetMetrics(), have_process ? &process : nullptr),
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
  CpuProfiler::StartResult r =
      profiler_.Start(seconds, [ctx](bool ok, std::string bytes_or_error) {
        auto out = std::make_unique<http::HttpResponse>();
        if (ok) {
          out->AddHeader("Content-Disposition", "attachment; filename=\"cpu.prof\"");
          out->SetBody(std::move(bytes_or_error), "application/octet-stream");
        } else {
          JsonError(out.get(), 503, bytes_or_error);
        }
        ctx->SetProtocolResponse(std::move(out));
        ctx->SendUnaryResponse(Status());
      }, &err);
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
