#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/http/http_method.h"
#include "trpc/codec/rpc_message.h"

namespace trpc::http {

/// "GET", "HEAD", ...
std::string_view HttpMethodName(HttpMethod m);
/// The reason phrase of a status code ("OK", "Not Found"); "Unknown" for codes we do not name.
std::string_view StatusReason(int status);

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

/// One HTTP request as a handler sees it: the request line, the header fields and the path
/// parameters the route matched. The body is the RpcRequest's (ServerContext::request().body),
/// de-chunked; HttpRequest::body() returns it as a string.
///
/// Made by the HTTP codec on the connection's loop thread, then read by the one handler of
/// the request.
class HttpRequest final : public ProtocolMessage {
 public:
  HttpMethod method() const { return method_; }
  /// The request-target as sent, and its path and query parts (not percent-decoded).
  const std::string& target() const { return target_; }
  const std::string& path() const { return path_; }
  const std::string& query() const { return query_; }
  /// 0 for HTTP/1.0, 1 for HTTP/1.1.
  int version_minor() const { return version_minor_; }
  bool keep_alive() const { return keep_alive_; }
  const HttpHeaders& headers() const { return headers_; }
  /// The first header field named `name` (ASCII case-insensitive), or null.
  const std::string* Header(std::string_view name) const;
  /// The value bound to `{name}` in the matched route pattern, or null.
  const std::string* PathParam(std::string_view name) const;
  /// The first query parameter `name` ("a=1&b=2"), not percent-decoded; empty when absent.
  std::string_view QueryParam(std::string_view name) const;
  /// The body (de-chunked), zero-copy, and as a string (a copy).
  const ChainBuffer& body_buffer() const { return body_ != nullptr ? *body_ : kEmpty; }
  std::string body() const { return body_buffer().ToString(); }

  // Codec and router use.
  void set_method(HttpMethod m) { method_ = m; }
  std::string& mutable_target() { return target_; }
  std::string& mutable_path() { return path_; }
  std::string& mutable_query() { return query_; }
  void set_version_minor(int v) { version_minor_ = v; }
  void set_keep_alive(bool k) { keep_alive_ = k; }
  HttpHeaders& mutable_headers() { return headers_; }
  std::vector<std::pair<std::string, std::string>>& mutable_path_params() { return params_; }
  /// The buffer that holds the body (the RpcRequest's); it must outlive this request.
  void set_body_buffer(const ChainBuffer* body) { body_ = body; }

  /// How the server's own refusal of this request is written (router use). The refusal is a
  /// framework error (filters and metrics see its `ret`), and a code alone maps to one HTTP
  /// status (12 -> 404, 1 -> 400): a 405 or 415 says here which status and headers (Allow)
  /// go with it. The codec uses them only while the reply still carries `ret` and no
  /// func_ret; a filter that replaces the status gets that status's own answer.
  struct ErrorAnswer {
    int32_t ret = 0;
    int status = 0;  // 0: none
    HttpHeaders headers;
  };
  void set_error_answer(ErrorAnswer answer) { error_answer_ = std::move(answer); }
  const ErrorAnswer& error_answer() const { return error_answer_; }

 private:
  HttpMethod method_ = HttpMethod::kGet;
  int version_minor_ = 1;
  bool keep_alive_ = true;
  std::string target_;
  std::string path_;
  std::string query_;
  HttpHeaders headers_;
  std::vector<std::pair<std::string, std::string>> params_;
  const ChainBuffer* body_ = nullptr;
  ErrorAnswer error_answer_;
  static const ChainBuffer kEmpty;
};

/// The answer an HTTP handler fills in: status (default 200), header fields and body. The
/// codec adds Content-Length, Date and, when the connection closes, "Connection: close";
/// Content-Type defaults to text/plain when the body is not empty and none was set.
class HttpResponse final : public ProtocolMessage {
 public:
  int status() const { return status_; }
  void set_status(int status) { status_ = status; }
  const HttpHeaders& headers() const { return headers_; }
  /// Adds a header field (a repeated name adds another field).
  void AddHeader(std::string name, std::string value) {
    headers_.emplace_back(std::move(name), std::move(value));
  }
  void SetContentType(std::string type) { content_type_ = std::move(type); }
  const std::string& content_type() const { return content_type_; }
  std::string& body() { return body_; }
  const std::string& body() const { return body_; }
  /// Replaces the body; with `content_type`, also the Content-Type.
  void SetBody(std::string body, std::string content_type = {}) {
    body_ = std::move(body);
    if (!content_type.empty()) content_type_ = std::move(content_type);
  }

 private:
  int status_ = 200;
  std::string content_type_;
  HttpHeaders headers_;
  std::string body_;
};

}  // namespace trpc::http
