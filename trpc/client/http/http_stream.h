#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/transport/tls_context.h"

namespace trpc::http {

/// Blocking HTTP/1.1 calls on the calling thread, one connection per call, with the response
/// body handed out as it arrives: for control-plane clients (the etcd registry and selector,
/// trpc/naming/etcd/) that run on plain background threads.
///
/// Why not HttpCall (http_client.h): a registry client runs before the runtime (reactors,
/// fibers) starts and while it stops, when a ServiceProxy cannot carry calls; and a watch is an
/// endless response, which the pooled in-order (FIFO) client, built to frame whole responses and
/// hand out one per call, cannot carry. The framing is the codec's strict ResponseParser in its
/// streaming mode (trpc/codec/http/detail/response_parser.h), so both clients agree on what a
/// response is.
struct HttpStreamOptions {
  uint32_t connect_timeout_ms = 3000;  // 0 = no limit
  /// Longest wait for the next bytes of the response (after the request is sent); 0 = none
  /// (a watch: the peer may be idle for long; TCP keepalive finds a dead peer).
  uint32_t read_timeout_ms = 3000;
  /// Limit on the whole call, from connect to the end of the response; 0 = none.
  uint32_t total_timeout_ms = 0;
  size_t max_head_bytes = 64 * 1024;   // status line + header section
  size_t max_piece_bytes = 64 * 1024;  // bytes read at once: a body piece is at most this
  /// TLS (a client context, e.g. from `ssl:` of the etcd plug-in); null = plaintext. The
  /// handshake is bounded by the context's handshake_timeout (and total_timeout_ms).
  std::shared_ptr<const TlsContext> tls;
  /// The host name (or IP) the server's certificate must name, and the SNI sent, unless the
  /// context's config names sni_name; "" = the address's IP.
  std::string tls_host;
};

struct HttpStreamRequest {
  std::string method = "POST";
  std::string target = "/";                                  // origin-form, e.g. "/v3/kv/range"
  std::vector<std::pair<std::string, std::string>> headers;  // Host and Content-Length are added
  std::string body;                                          // sent with a Content-Length
};

/// The final response's status line and header fields.
struct HttpStreamHead {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// One streaming call at a time, cancellable from any thread.
///
///   HttpStream s(options);
///   std::string err;
///   bool done = s.Run(addr, request, on_head, on_body, &err);  // on the background thread
///   s.Cancel();                                               // from another: Run returns
///
/// Thread contract: Run from one thread at a time; Cancel and cancelled() from any thread.
/// Cancel is sticky: a Run in progress returns promptly (its blocked poll wakes through an
/// eventfd), and any later Run returns at once; the object cannot be un-cancelled. The callbacks
/// run on Run's thread.
class HttpStream {
 public:
  /// Called once with the final head, before any body piece; false stops the call.
  using OnHead = std::function<bool(const HttpStreamHead&)>;
  /// Called with each piece of the (de-chunked) body as it arrives, at most max_piece_bytes
  /// each; false stops the call.
  using OnBody = std::function<bool(std::string_view)>;

  explicit HttpStream(const HttpStreamOptions& options = {});
  ~HttpStream();
  HttpStream(const HttpStream&) = delete;
  HttpStream& operator=(const HttpStream&) = delete;

  /// Connects to `addr` (with a TLS handshake when options.tls is set), sends `req` and reads
  /// the response. True when the response was read to its end; false with `*err` otherwise:
  /// "cancelled", "stopped" (a callback returned false), "connect ...: <reason>", "TLS
  /// handshake with ...: <OpenSSL's reason>", "read timeout", "connection closed ...",
  /// "malformed response: <reason>", ...
  bool Run(const NetAddress& addr, const HttpStreamRequest& req, const OnHead& on_head,
           const OnBody& on_body, std::string* err);

  /// Run, collecting the whole response: its status and body (at most `max_body` bytes, else
  /// false with "response body over N bytes"). For unary calls.
  bool Fetch(const NetAddress& addr, const HttpStreamRequest& req, size_t max_body, int* status,
             std::string* body, std::string* err);

  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

  /// How a wait for the socket ended (internal; public for the implementation's helpers).
  enum class Wait { kReady, kTimeout, kCancelled, kError };

 private:
  Wait WaitFor(int fd, short events, int64_t deadline_ns);
  class Io;  // the socket, plain or through OpenSSL

  const HttpStreamOptions options_;
  // Written once by Cancel (release), read by Run (acquire); the eventfd wakes a blocked poll.
  std::atomic<bool> cancelled_{false};
  int event_fd_ = -1;
};

/// HttpStream(options).Fetch(...): a unary call that nothing needs to cancel.
bool HttpFetch(const NetAddress& addr, const HttpStreamRequest& req,
               const HttpStreamOptions& options, size_t max_body, int* status, std::string* body,
               std::string* err);

}  // namespace trpc::http
