#include "trpc/client/http/http_client.h"

#include <memory>
#include <utility>

#include "trpc/codec/http/detail/http_client_codec.h"
#include "trpc/codec/http/detail/http_syntax.h"
#include "trpc/codec/http/detail/response_parser.h"

namespace trpc::http {

namespace {

// Sends the request; `done` gets the decoded response or the failure.
void Send(ServiceProxy& proxy, const ClientContextPtr& ctx, HttpMethod method, std::string target,
          std::string body, HttpHeaders headers,
          std::function<void(const Status&, HttpClientResponse&&)> done) {
  auto request = std::make_unique<HttpClientRequest>();
  request->method = method;
  request->target = std::move(target);
  request->headers = std::move(headers);
  RpcRequest req;
  req.func = request->target;  // for logs and filters: what was called
  req.body.Append(body);
  req.protocol = std::move(request);
  proxy.AsyncInvokeFrame(ctx, std::move(req),
                         [done = std::move(done)](const Status& st, ChainBuffer&& frame) {
                           HttpClientResponse rsp;
                           if (!st.OK()) {
                             done(st, std::move(rsp));
                             return;
                           }
                           std::string err;
                           if (!DecodeHttpResponse(std::move(frame), &rsp, &err)) {
                             done(Status(kClientDecodeErr, err), std::move(rsp));
                             return;
                           }
                           done(st, std::move(rsp));
                         });
}

}  // namespace

const std::string* HttpClientResponse::Header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (detail::EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

bool DecodeHttpResponse(ChainBuffer&& frame, HttpClientResponse* out, std::string* err) {
  // The frame's head parsed again, as the answer to a HEAD request: it ends at its blank line.
  detail::ResponseParser parser;
  parser.set_head_request(true);
  if (parser.Parse(frame) != detail::ResponseParser::Result::kComplete) {
    *err = "not an HTTP response frame: " +
           (parser.error().empty() ? std::string("incomplete head") : parser.error());
    return false;
  }
  detail::ResponseHead& h = parser.head();
  out->status = h.status;
  out->reason = std::move(h.reason);
  out->version_minor = h.version_minor;
  out->headers = std::move(h.headers);
  frame.Skip(parser.head_end());
  out->body = std::move(frame);
  return true;
}

Future<HttpClientResponse> AsyncHttpCall(ServiceProxy& proxy, const ClientContextPtr& ctx,
                                         HttpMethod method, std::string target, std::string body,
                                         HttpHeaders headers) {
  auto promise = std::make_shared<Promise<HttpClientResponse>>();
  Future<HttpClientResponse> fut = promise->GetFuture();
  Send(proxy, ctx, method, std::move(target), std::move(body), std::move(headers),
       [promise](const Status& st, HttpClientResponse&& rsp) {
         if (st.OK()) {
           promise->SetValue(std::move(rsp));
         } else {
           promise->SetException(st);
         }
       });
  return fut;
}

Status HttpCall(ServiceProxy& proxy, const ClientContextPtr& ctx, HttpMethod method,
                std::string target, std::string body, HttpHeaders headers,
                HttpClientResponse* rsp) {
  return proxy.WaitFor(ctx, "AsyncHttpCall", [&](ServiceProxy::Done done) {
    Send(proxy, ctx, method, std::move(target), std::move(body), std::move(headers),
         [rsp, done = std::move(done)](const Status& st, HttpClientResponse&& r) {
           if (st.OK()) *rsp = std::move(r);
           done(st);
         });
  });
}

}  // namespace trpc::http
