#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trpc/codec/http/http_message.h"
#include "trpc/server/service.h"

namespace trpc::http {

/// A plain HTTP handler: reads the request, fills the response (status 200 unless set). Runs
/// like an RPC handler: inline on the worker in the merged model, in its own fiber in the fiber
/// model. A throw becomes 500.
///
/// Replying later: a handler that calls ctx->SetResponse(false) takes the reply over — `rsp` is
/// then ignored, and the handler (or the thread it handed `ctx` to) sends exactly once, from
/// any thread: ctx->SetProtocolResponse(std::make_unique<HttpResponse>(...)), then
/// ctx->SendUnaryResponse(Status()). Pipelined replies still leave in request order.
using HttpHandler =
    std::function<void(const ServerContextPtr& ctx, const HttpRequest& req, HttpResponse* rsp)>;

/// A service for the "http" protocol: routes by method and path to HttpHandlers, and serves RPC
/// services through the REST mapping (POST /package.Service/Method with a protobuf or JSON body).
///
///   auto svc = std::make_shared<trpc::http::HttpService>();
///   svc->Get("/", [](auto&, auto&, auto* rsp) { rsp->SetBody("{}", "application/json"); });
///   svc->Get("/users/{id}", [](auto&, const auto& req, auto* rsp) {
///     rsp->SetBody("user " + *req.PathParam("id"));
///   });
///   svc->MapRpc(std::make_shared<GreeterImpl>());
///
/// Patterns are paths whose segments are literals or `{name}` (one whole segment). A literal
/// route beats a pattern; among patterns the first registered wins. HEAD falls back to GET. A
/// path with routes but none for the method gets 405 with an Allow header; an RPC path with a
/// method other than POST gets 405, and a body other than protobuf/JSON 415; anything else 404.
/// These answers are framework errors, as filters and metrics see them: ret 12 (404, 405) or 1
/// (415), also the "code" of their JSON error body.
///
/// Thread contract: register routes before the server starts; Route() is then safe from any
/// thread.
/// The token of the request's `Authorization: Bearer <token>` header (scheme matched without
/// regard to case, surrounding spaces dropped); "" when there is none.
std::string_view BearerToken(const HttpRequest& req);

class HttpService : public Service {
 public:
  HttpService();
  ~HttpService() override;
  /// Routes are path patterns, not a table of funcs.
  bool RoutesOnlyItsMethods() const override { return false; }

  void Handle(HttpMethod method, std::string_view pattern, HttpHandler fn);
  void Get(std::string_view pattern, HttpHandler fn) { Handle(HttpMethod::kGet, pattern, fn); }
  void Post(std::string_view pattern, HttpHandler fn) { Handle(HttpMethod::kPost, pattern, fn); }
  void Put(std::string_view pattern, HttpHandler fn) { Handle(HttpMethod::kPut, pattern, fn); }
  void Delete(std::string_view pattern, HttpHandler fn) {
    Handle(HttpMethod::kDelete, pattern, fn);
  }
  /// Serves every method of `service` at POST /package.Service/Method.
  void MapRpc(ServicePtr service);

  /// Checks each request's Host before routing: a Host that `allowed` refuses (given the
  /// header's value as sent, port included) gets 403 with a JSON error, ret 41 (auth), and runs
  /// no handler. A request without Host (HTTP/1.0) is not checked. Against DNS rebinding: a
  /// browser page of another site that resolves its name to this server sends that name.
  /// Before the server starts.
  void CheckHost(std::function<bool(std::string_view host)> allowed);
  /// Requires `Authorization: Bearer <token>` on each request, after the Host check, except on
  /// the literal paths in `open_paths`. `accept` gets the token as sent ("" when the header is
  /// missing or not a bearer token) and says whether it is good; a refused request gets 401
  /// with `WWW-Authenticate: Bearer`, a JSON error, ret 41 (auth), and runs no handler.
  /// `accept` runs on the service's threads and must compare in constant time. Before the
  /// server starts.
  void RequireBearerToken(std::function<bool(std::string_view token)> accept,
                          std::vector<std::string> open_paths = {});
  RpcMethodHandler* Route(ServerContext& ctx) const override;
  /// Routes as "GET /users/{id}", then the mapped RPC methods by wire name.
  void ForEachMethod(const MethodVisitor& fn) const override;

 private:
  static constexpr size_t kMethods = 9;
  struct RouteEntry {
    std::vector<std::string> segments;  // empty for literal routes; "{x}" marks a parameter
    std::array<std::unique_ptr<RpcMethodHandler>, kMethods> handlers;
    std::unique_ptr<RpcMethodHandler> not_allowed;  // 405 listing the methods above
  };

  RpcMethodHandler* Pick(const RouteEntry& e, HttpMethod m) const;
  static bool Match(const RouteEntry& e, std::string_view path, HttpRequest* req);

  std::unordered_map<std::string, std::unique_ptr<RouteEntry>> literal_;
  std::vector<std::unique_ptr<RouteEntry>> patterns_;
  std::vector<ServicePtr> rpc_services_;
  std::unique_ptr<RpcMethodHandler> not_found_;
  std::unique_ptr<RpcMethodHandler> rpc_not_allowed_;
  std::unique_ptr<RpcMethodHandler> rpc_bad_media_;
  std::function<bool(std::string_view)> host_allowed_;  // null: every Host
  std::unique_ptr<RpcMethodHandler> host_refused_;
  std::function<bool(std::string_view)> token_accepted_;  // null: no token asked for
  std::vector<std::string> token_open_paths_;
  std::unique_ptr<RpcMethodHandler> token_refused_;
};

}  // namespace trpc::http
