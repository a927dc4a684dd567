#include "trpc/server/http/http_service.h"

#include <algorithm>
#include <cctype>

#include "trpc/base/logging.h"
#include "trpc/codec/detail/codec.h"

namespace trpc::http {

namespace {

// Runs an HttpHandler and hands its HttpResponse to the codec.
class HttpMethodHandler final : public RpcMethodHandler {
 public:
  explicit HttpMethodHandler(HttpHandler fn) : fn_(std::move(fn)) {}

  void Handle(const ServerContextPtr& ctx) override {
    auto* req = static_cast<HttpRequest*>(Request(ctx).protocol.get());
    // On the stack: it is encoded before SendReply returns (or ignored if the handler takes
    // the reply over), so no allocation is needed for it.
    HttpResponse rsp;
    fn_(ctx, *req, &rsp);
    if (!ctx->IsResponse()) return;  // taken over (SetResponse(false)): the handler replies
    const Status& status = ctx->GetStatus();
    if (status.GetFrameworkRetCode() != 0) [[unlikely]]
      trpc::detail::CheckHandlerRetCode(*ctx, status);
    SetProtocolResponseRef(ctx, &rsp);
    SendReply(ctx, status, nullptr);
  }

 private:
  HttpHandler fn_;
};

// The server's own refusals (404, 405, 415): a framework error, so that filters and metrics
// see it, written with its HTTP status and headers (HttpRequest::ErrorAnswer) and the codec's
// JSON error body {"code": ret, "func_code": 0, "message": ...}.
class FixedAnswer final : public RpcMethodHandler {
 public:
  FixedAnswer(int status, int32_t ret, std::string message, std::string allow = {})
      : status_(status), ret_(ret), message_(std::move(message)) {
    if (!allow.empty()) headers_.emplace_back("Allow", std::move(allow));
  }
  FixedAnswer(int status, int32_t ret, std::string message, HttpHeaders headers)
      : status_(status), ret_(ret), message_(std::move(message)), headers_(std::move(headers)) {}

  void Handle(const ServerContextPtr& ctx) override {
    auto* req = static_cast<HttpRequest*>(Request(ctx).protocol.get());
    req->set_error_answer({ret_, status_, headers_});
    SendReply(ctx, Status(ret_, message_), nullptr);
  }

 private:
  int status_;
  int32_t ret_;
  std::string message_;
  HttpHeaders headers_;
};

std::vector<std::string> SplitPath(std::string_view path) {
  std::vector<std::string> segs;
  size_t i = 1;  // past the leading '/'
  while (i <= path.size()) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    segs.emplace_back(path.substr(i, slash - i));
    i = slash + 1;
  }
  return segs;
}

bool IsParam(std::string_view seg) {
  return seg.size() >= 2 && seg.front() == '{' && seg.back() == '}';
}

}  // namespace

HttpService::HttpService()
    : not_found_(std::make_unique<FixedAnswer>(404, kServerNoFuncErr, "no route for this path")),
      rpc_not_allowed_(std::make_unique<FixedAnswer>(405, kServerNoFuncErr,
                                                     "RPC methods are called with POST", "POST")),
      rpc_bad_media_(std::make_unique<FixedAnswer>(
          415, kServerDecodeErr, "RPC bodies are application/json or application/x-protobuf")) {}

HttpService::~HttpService() = default;

void HttpService::Handle(HttpMethod method, std::string_view pattern, HttpHandler fn) {
  TRPC_CHECK(!pattern.empty() && pattern.front() == '/', "an HTTP route starts with '/'");
  std::vector<std::string> segs = SplitPath(pattern);
  bool has_param = false;
  for (const auto& s : segs) has_param = has_param || IsParam(s);
  RouteEntry* e = nullptr;
  if (!has_param) {
    auto& slot = literal_[std::string(pattern)];
    if (!slot) slot = std::make_unique<RouteEntry>();
    e = slot.get();
  } else {
    for (auto& p : patterns_) {
      if (p->segments == segs) e = p.get();
    }
    if (e == nullptr) {
      patterns_.push_back(std::make_unique<RouteEntry>());
      e = patterns_.back().get();
      e->segments = std::move(segs);
    }
  }
  e->handlers[static_cast<size_t>(method)] = std::make_unique<HttpMethodHandler>(std::move(fn));
  std::string allow;
  for (size_t i = 0; i < kMethods; ++i) {
    if (!e->handlers[i]) continue;
    if (!allow.empty()) allow += ", ";
    allow += HttpMethodName(static_cast<HttpMethod>(i));
    if (static_cast<HttpMethod>(i) == HttpMethod::kGet &&
        !e->handlers[static_cast<size_t>(HttpMethod::kHead)]) {
      allow += ", HEAD";
    }
  }
  e->not_allowed = std::make_unique<FixedAnswer>(405, kServerNoFuncErr,
                                                 "method not allowed on this path", allow);
}

void HttpService::MapRpc(ServicePtr service) { rpc_services_.push_back(std::move(service)); }

void HttpService::ForEachMethod(const MethodVisitor& fn) const {
  auto routes = [&](const std::string& pattern, const RouteEntry& e) {
    for (size_t i = 0; i < kMethods; ++i) {
      if (e.handlers[i]) {
        fn(std::string(HttpMethodName(static_cast<HttpMethod>(i))) + " " + pattern,
           e.handlers[i].get());
      }
    }
  };
  std::vector<const std::string*> literals;
  for (const auto& [path, e] : literal_) literals.push_back(&path);
  std::sort(literals.begin(), literals.end(), [](auto* a, auto* b) { return *a < *b; });
  for (const std::string* path : literals) routes(*path, *literal_.at(*path));
  for (const auto& p : patterns_) {
    std::string pattern;
    for (const auto& seg : p->segments) pattern += "/" + seg;
    routes(pattern, *p);
  }
  for (const auto& svc : rpc_services_) svc->ForEachMethod(fn);
  Service::ForEachMethod(fn);
}

RpcMethodHandler* HttpService::Pick(const RouteEntry& e, HttpMethod m) const {
  if (auto& h = e.handlers[static_cast<size_t>(m)]) return h.get();
  if (m == HttpMethod::kHead) {
    if (auto& h = e.handlers[static_cast<size_t>(HttpMethod::kGet)]) return h.get();
  }
  return e.not_allowed.get();
}

bool HttpService::Match(const RouteEntry& e, std::string_view path, HttpRequest* req) {
  if (path.empty() || path.front() != '/') return false;
  size_t i = 1, n = 0;
  auto& params = req->mutable_path_params();
  params.clear();
  while (true) {
    size_t slash = path.find('/', i);
    if (slash == std::string_view::npos) slash = path.size();
    if (n >= e.segments.size()) return false;
    std::string_view seg = path.substr(i, slash - i);
    const std::string& want = e.segments[n++];
    if (IsParam(want)) {
      if (seg.empty()) return false;
      params.emplace_back(want.substr(1, want.size() - 2), std::string(seg));
    } else if (seg != want) {
      return false;
    }
    if (slash == path.size()) break;
    i = slash + 1;
  }
  return n == e.segments.size();
}

void HttpService::CheckHost(std::function<bool(std::string_view host)> allowed) {
  host_allowed_ = std::move(allowed);
  host_refused_ = std::make_unique<FixedAnswer>(403, kServerAuthErr,
                                                "this server does not answer that Host name");
}

void HttpService::RequireBearerToken(std::function<bool(std::string_view token)> accept,
                                     std::vector<std::string> open_paths) {
  token_accepted_ = std::move(accept);
  token_open_paths_ = std::move(open_paths);
  token_refused_ = std::make_unique<FixedAnswer>(
      401, kServerAuthErr, "this path needs an 'Authorization: Bearer <token>' header",
      HttpHeaders{{"WWW-Authenticate", "Bearer"}});
}

std::string_view BearerToken(const HttpRequest& req) {
  const std::string* auth = req.Header("Authorization");
  if (auth == nullptr) return {};
  std::string_view v = *auth;
  // The scheme is case-insensitive (RFC 9110, 11.1); one or more spaces follow it.
  constexpr std::string_view kScheme = "bearer";
  if (v.size() <= kScheme.size() || v[kScheme.size()] != ' ') return {};
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(v[i])) != kScheme[i]) return {};
  }
  v.remove_prefix(kScheme.size());
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

RpcMethodHandler* HttpService::Route(ServerContext& ctx) const {
  auto* req = static_cast<HttpRequest*>(Request(ctx).protocol.get());
  if (req == nullptr) return Service::Route(ctx);  // configured with another protocol
  if (host_allowed_) {
    const std::string* host = req->Header("Host");
    if (host != nullptr && !host_allowed_(*host)) return host_refused_.get();
  }
  const std::string& path = req->path();
  if (token_accepted_ &&
      std::find(token_open_paths_.begin(), token_open_paths_.end(), path) ==
          token_open_paths_.end() &&
      !token_accepted_(BearerToken(*req))) {
    return token_refused_.get();
  }
  if (auto it = literal_.find(path); it != literal_.end()) return Pick(*it->second, req->method());
  for (const auto& p : patterns_) {
    if (Match(*p, path, req)) return Pick(*p, req->method());
  }
  req->mutable_path_params().clear();
  for (const auto& svc : rpc_services_) {
    RpcMethodHandler* m = svc->FindMethod(path);
    if (m == nullptr) continue;
    if (req->method() != HttpMethod::kPost) return rpc_not_allowed_.get();
    uint32_t ct = Request(ctx).content_type;
    if (ct != kContentTypeJson && ct != kContentTypeProtobuf) return rpc_bad_media_.get();
    return m;
  }
  if (RpcMethodHandler* own = FindMethod(path)) return own;
  return not_found_.get();
}

}  // namespace trpc::http
