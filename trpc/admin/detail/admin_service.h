#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/admin/detail/admin_token.h"
#include "trpc/admin/detail/cpu_profiler.h"
#include "trpc/server/http/http_service.h"

namespace trpc {
class Server;
}  // namespace trpc

namespace trpc::admin {

/// The admin endpoints of one Server (docs/admin.md), served over HTTP on server.admin_port by
/// the server itself, on a one-thread merge model of its own:
///
///   GET /metrics                     Prometheus text (prometheus_text.h)
///   GET /cmds/stats                  the same numbers as JSON (stats_json.h)
///   GET /version                     {"version", "build_type", "commit"}
///   GET /cmds/loglevel               {"level":"info"}
///   PUT /cmds/loglevel               body {"level":"debug"} or `debug`; 400 for a bad level
///   GET /cmds/profile/cpu?seconds=N  a gperftools CPU profile of N (1..60, default 10)
///                                    seconds; 409 while one runs
///
/// A request whose Host is not localhost, a numeric address or one of `allowed_hosts` gets 403
/// before any handler runs (HostAllowed; against DNS rebinding).
///
/// Every handler answers at once from counters and files, except the profile, which replies
/// later from its own thread (ctx->SetResponse(false)), so the admin thread stays free.
///
/// Thread contract: handlers run on the admin thread; Stop() from the control thread.
/// Whether the admin answers a request with this Host header value ("name[:port]",
/// "[v6]:port"): localhost (and *.localhost), any numeric IPv4/IPv6 address, or a name in
/// `allowed` (lower case; "*" = any). DNS rebinding needs a name the attacker's DNS answers,
/// and a page loaded from a numeric address or from localhost is not another site's.
bool HostAllowed(std::string_view host, const std::vector<std::string>& allowed);

class AdminService final : public http::HttpService {
 public:
  /// `server` must outlive the service's handlers (the server stops its admin service first).
  /// With `token`, every request but GET /health must carry it (HttpService::RequireBearerToken).
  AdminService(const Server* server, std::vector<std::string> allowed_hosts,
               std::shared_ptr<AdminToken> token = nullptr);
  ~AdminService() override;

  /// Ends a CPU profile in progress (its caller gets 503) and waits for its thread.
  void Stop();

 private:
  void Metrics(http::HttpResponse* rsp) const;
  void Stats(http::HttpResponse* rsp) const;
  void SetLogLevel(const http::HttpRequest& req, http::HttpResponse* rsp) const;
  void Profile(const ServerContextPtr& ctx, const http::HttpRequest& req, http::HttpResponse* rsp);

  const Server* server_;
  std::shared_ptr<AdminToken> token_;  // null: no token asked for
  CpuProfiler profiler_;
};

}  // namespace trpc::admin
