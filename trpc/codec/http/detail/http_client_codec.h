#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/codec/detail/codec.h"
#include "trpc/codec/http/detail/response_parser.h"
#include "trpc/codec/http/http_message.h"

namespace trpc::http {

/// The protocol part (RpcRequest::protocol) of a plain HTTP request sent through the client
/// codec, instead of the REST mapping of an RPC. The body is the RpcRequest's.
struct HttpClientRequest final : public ProtocolMessage {
  HttpMethod method = HttpMethod::kGet;
  std::string target = "/";  // origin-form: path and query, as sent
  /// Sent in order after Host (which a "Host" here replaces). Content-Length,
  /// Transfer-Encoding and Connection are the codec's and are not sent.
  HttpHeaders headers;
};

/// The client half of HTTP/1.1 (RFC 9112), registered as protocol "http".
///
/// HTTP/1.1 responses carry no request id: they answer a connection's requests in order
/// (FifoResponses), so ClientConnection matches each to the oldest request outstanding and the
/// service proxy keeps a keep-alive pool of connections (ClientConnectionPool), optionally
/// pipelined.
///
/// Requests: an RPC (no protocol part) becomes the REST mapping the server side serves,
///
///   POST /package.Service/Method HTTP/1.1
///   Host: <backend ip:port>              (RpcRequest::authority; else the callee name)
///   Content-Type: application/x-protobuf (application/json when content_type is JSON)
///   Content-Length: <n>
///
/// with the message as the body; a request carrying an HttpClientRequest is sent with its method,
/// target and headers. Neither sends trans_info or the timeout (HTTP has no place for them that
/// the server reads).
///
/// Responses: Split runs the connection's incremental parser (detail/response_parser.h) and cuts
/// one frame per final response (the format http_client.h's DecodeHttpResponse reads): its head
/// as received, then its body de-chunked; interim 1xx
/// responses are skipped, a response to HEAD has no body, and a response without a length ends
/// with the connection. A response that says the connection ends (Connection: close, HTTP/1.0,
/// a body read until the close) makes the connection close after it. Malformed bytes are an
/// error and close the connection (its calls fail with 141); so are bytes nobody asked for.
///
/// DecodeResponse maps a 2xx to success with the body (protobuf, or JSON by Content-Type), and
/// any other status back to framework codes: from the server's JSON error body
/// {"code": ret, "func_code": func_ret, "message": ...} when it carries codes, else from the
/// status (RetCodeOfHttpStatus).
///
/// Stateless apart from the per-connection state; safe on many threads at once.
class HttpClientCodec final : public ClientCodec {
 public:
  explicit HttpClientCodec(const detail::ResponseLimits& limits = {}) : limits_(limits) {}

  std::string_view Name() const override { return "http"; }
  bool FifoResponses() const override { return true; }
  TlsAlpn Alpn() const override { return {{"http/1.1"}, false}; }
  std::unique_ptr<FrameCodecState> NewConnectionState() override;
  void OnRequestSent(FrameCodecState* state, const ChainBuffer& request) override;
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;
  /// `max_frame_size` (the proxy's max_packet_size) bounds each response's body, and every byte
  /// of it as received (interim responses, head, chunk framing, trailers).
  SplitResult SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                             std::string* err, FrameCodecState* state) override;
  bool EncodeRequest(RpcRequest* req, const google::protobuf::MessageLite* body_msg,
                     ChainBuffer* out) override;
  bool DecodeResponse(ChainBuffer&& frame, RpcResponse* rsp, std::string* err) override;

 private:
  detail::ResponseLimits limits_;
};

/// The framework code an HTTP status means when the response carries none (the inverse of the
/// server's HttpStatusOf where it is one-to-one): 2xx -> 0; 400, 411, 413, 414, 415, 422,
/// 431 -> 1 (decode); 401, 403 -> 41 (auth); 404, 405 -> 12 (no such method); 408, 504 -> 21
/// (timeout); 429 -> 23 (limited); 503 -> 22 (overload); other 5xx -> 31 (system); anything
/// else -> 999 (unknown).
int32_t RetCodeOfHttpStatus(int status);

}  // namespace trpc::http
