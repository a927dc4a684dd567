#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/codec/detail/codec.h"

namespace trpc::http {

inline constexpr std::string_view kHttpCodecName = "http";

/// Limits of the HTTP/1.1 server codec; docs/http.md has a line for each (meaning, default,
/// the status a request over it gets).
struct HttpServerOptions {
  size_t max_request_line = 8 * 1024;   // bytes -> 414
  size_t max_header_bytes = 64 * 1024;  // bytes -> 431
  size_t max_header_count = 100;        // -> 431
  size_t max_body_bytes = 8u << 20;     // bytes -> 413
  /// A request head must be complete this long after its first byte arrived (slowloris);
  /// otherwise the connection gets 408 and closes. 0 = no limit.
  int64_t header_timeout_ms = 10'000;
  /// REST mapping: JSON replies also list the fields that hold their default value (0, false,
  /// "", empty lists and maps), which protobuf's JSON mapping otherwise leaves out.
  bool json_emit_defaults = false;
};

/// The server half of HTTP/1.1 (RFC 9112), registered as protocol "http".
///
/// Split runs the connection's incremental parser (detail/request_parser.h) and cuts one frame
/// per request: the body (de-chunked), while the parsed head waits in the connection's state
/// until DecodeRequest takes it, in order. Every complete request of a read is handed up
/// (pipelining); replies are put back in request order by the connection (OrderedReplies) and
/// a read batch's replies leave in one writev. Keep-alive is the default in 1.1, "Connection:
/// close" and 1.0 without keep-alive end the connection after their reply, and
/// "Expect: 100-continue" gets its interim answer once the head is read. A malformed request
/// gets its 4xx/5xx answer (after the replies of the requests before it) and the connection
/// closes. `max_frame_size` (the service's max_packet_size) bounds every byte of one request as
/// sent (head, body, chunk framing, trailers): over it is 413 (414/431 within the head).
///
/// Requests become RpcRequests whose func is the path (so POST /pkg.Service/Method reaches that
/// RPC method: the REST mapping) and whose protocol part is an HttpRequest (http_message.h).
/// A reply carrying an HttpResponse is written as it is; a neutral RPC reply becomes 200 with
/// the message as protobuf or JSON (the request's Content-Type), and an error becomes the
/// matching status with a JSON body {"code": ret, "func_code": ..., "message": "..."}.
///
/// Stateless apart from the per-connection state; safe on many threads at once.
class HttpServerCodec final : public ServerCodec {
 public:
  explicit HttpServerCodec(const HttpServerOptions& options = {}) : options_(options) {}

  std::string_view Name() const override { return kHttpCodecName; }
  std::unique_ptr<FrameCodecState> NewConnectionState() override;
  bool OrderedReplies() const override { return true; }
  bool PeerMayHalfClose() const override { return true; }
  /// HTTP/1.1 only: a client that offers h2 and http/1.1 (curl) is given http/1.1; one that
  /// offers no ALPN is served too.
  TlsAlpn Alpn() const override { return {{"http/1.1"}, false}; }
  SplitResult Split(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                    std::string* err) override;
  SplitResult SplitWithState(ChainBuffer* in, std::vector<ChainBuffer>* out, size_t max_frame_size,
                             std::string* err, FrameCodecState* state) override;
  bool DecodeRequest(ChainBuffer&& frame, RpcRequest* req, std::string* err) override;
  bool DecodeRequestWithState(ChainBuffer&& frame, FrameCodecState* state, RpcRequest* req,
                              std::string* err) override;
  bool EncodeResponse(RpcResponse* rsp, const google::protobuf::MessageLite* body_msg,
                      ChainBuffer* out) override;
  /// Options: the HttpServerOptions fields by name (max_request_line, max_header_bytes,
  /// max_header_count, max_body_bytes, header_timeout_ms: decimal integers;
  /// json_emit_defaults: true or false).
  std::shared_ptr<ServerCodec> WithOptions(const std::map<std::string, std::string>& options,
                                           std::string* key, std::string* err) override;
  const HttpServerOptions& options() const { return options_; }

 private:
  HttpServerOptions options_;
};

/// The HTTP status an RPC reply's codes map to (REST mapping): 0 -> 200, 1 -> 400, 11/12 -> 404,
/// 21/24/101/102 -> 504, 22 -> 503, 23 -> 429, 41 -> 401, 51 -> 400, a handler's own code
/// (func_ret) -> 500, other framework errors -> 500 or 502.
int HttpStatusOf(int32_t ret, int32_t func_ret);

}  // namespace trpc::http
