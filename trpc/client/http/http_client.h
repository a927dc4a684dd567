#pragma once

#include <string>
#include <string_view>

#include "trpc/base/status.h"
#include "trpc/client/client_context.h"
#include "trpc/client/service_proxy.h"
#include "trpc/codec/http/http_message.h"
#include "trpc/future/future.h"

namespace trpc::http {

/// Plain HTTP/1.1 requests, for what is not an RPC (a REST API, a health check, a page), through
/// a ServiceProxy configured with `protocol: http`: its backends, keep-alive pool, pipelining,
/// timeouts and RPC_INVOKE/PRE_SEND_MSG filters.
///
///   auto proxy = trpc::GetTrpcClient()->GetProxy("my_http_backend");
///   trpc::http::HttpClientResponse rsp;
///   trpc::Status st = trpc::http::HttpGet(*proxy, trpc::MakeClientContext(), "/health", &rsp);
///   if (st.OK() && rsp.status == 200) ...
///
/// Every HTTP status is a completed call (read `rsp.status`); the Status fails only when the
/// call did: 101 (timeout), 111 (connect), 141 (connection lost), 121 (a target or header that
/// cannot be sent: CR, LF, space...), 122 (a reply that does not decode).
///
/// Thread contract: as ServiceProxy's invoke methods. The synchronous forms park the calling
/// fiber or block the calling thread, and are refused (31) on a merge worker: use the
/// asynchronous one there.

/// A response as DecodeHttpResponse reads it.
struct HttpClientResponse {
  int status = 0;
  std::string reason;
  int version_minor = 1;
  HttpHeaders headers;  // in order, as sent (the final response's; interim ones are skipped)
  ChainBuffer body;     // de-chunked

  /// The first header field named `name` (ASCII case-insensitive), or null.
  const std::string* Header(std::string_view name) const;
};

/// Reads a frame cut by HttpClientCodec (the final response's head as received, then its
/// de-chunked body) into `*out`. False with `*err` on a frame that is not one.
bool DecodeHttpResponse(ChainBuffer&& frame, HttpClientResponse* out, std::string* err);

/// Sends `method target HTTP/1.1` with `headers` and `body` (with a Content-Length when there is
/// a body, and always for POST, PUT and PATCH). The future fails with the call's Status.
Future<HttpClientResponse> AsyncHttpCall(ServiceProxy& proxy, const ClientContextPtr& ctx,
                                         HttpMethod method, std::string target,
                                         std::string body = {}, HttpHeaders headers = {});

/// AsyncHttpCall, waiting for the reply.
Status HttpCall(ServiceProxy& proxy, const ClientContextPtr& ctx, HttpMethod method,
                std::string target, std::string body, HttpHeaders headers, HttpClientResponse* rsp);

inline Status HttpGet(ServiceProxy& proxy, const ClientContextPtr& ctx, std::string target,
                      HttpClientResponse* rsp) {
  return HttpCall(proxy, ctx, HttpMethod::kGet, std::move(target), {}, {}, rsp);
}

inline Status HttpPost(ServiceProxy& proxy, const ClientContextPtr& ctx, std::string target,
                       std::string body, std::string content_type, HttpClientResponse* rsp) {
  return HttpCall(proxy, ctx, HttpMethod::kPost, std::move(target), std::move(body),
                  {{"Content-Type", std::move(content_type)}}, rsp);
}

}  // namespace trpc::http
