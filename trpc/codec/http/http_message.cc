#include "trpc/codec/http/http_message.h"

#include <strings.h>

namespace trpc::http {

std::string_view HttpMethodName(HttpMethod m) {
  static constexpr std::string_view kNames[] = {"GET",    "HEAD",    "POST",  "PUT",    "DELETE",
                                                "PATCH",  "OPTIONS", "TRACE", "CONNECT"};
  auto i = static_cast<size_t>(m);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view StatusReason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

const ChainBuffer HttpRequest::kEmpty{};

const std::string* HttpRequest::Header(std::string_view name) const {
  for (const auto& [k, v] : headers_) {
    if (k.size() == name.size() && strncasecmp(k.data(), name.data(), k.size()) == 0) return &v;
  }
  return nullptr;
}

const std::string* HttpRequest::PathParam(std::string_view name) const {
  for (const auto& [k, v] : params_) {
    if (k == name) return &v;
  }
  return nullptr;
}

std::string_view HttpRequest::QueryParam(std::string_view name) const {
  std::string_view q = query_;
  while (!q.empty()) {
    size_t amp = q.find('&');
    std::string_view pair = q.substr(0, amp);
    size_t eq = pair.find('=');
    if (pair.substr(0, eq) == name) return eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    if (amp == std::string_view::npos) break;
    q.remove_prefix(amp + 1);
  }
  return {};
}

}  // namespace trpc::http
