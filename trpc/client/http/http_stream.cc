#include "trpc/client/http/http_stream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/clock.h"
#include "trpc/codec/http/detail/response_parser.h"

namespace trpc::http {

namespace {

int64_t DeadlineAfter(uint32_t ms) {
  return ms == 0 ? INT64_MAX : MonotonicNanos() + static_cast<int64_t>(ms) * kNanosPerMilli;
}

// Closes the socket on every way out of Run.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

std::string Errno(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// A target or header that would break the request line or split a header.
bool HasCtl(std::string_view s) {
  for (char c : s) {
    if (c == '\r' || c == '\n' || c == '\0') return true;
  }
  return false;
}

}  // namespace

HttpStream::HttpStream(const HttpStreamOptions& options) : options_(options) {
  event_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

HttpStream::~HttpStream() {
  if (event_fd_ >= 0) ::close(event_fd_);
}

void HttpStream::Cancel() {
  // The flag first (release), then the wake-up: a Run that misses the eventfd's poll sees the
  // flag at its next check, and one blocked in poll wakes on the eventfd (never reset: sticky).
  cancelled_.store(true, std::memory_order_release);
  if (event_fd_ >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof(one));
  }
}

// Waits until `fd` has `events`, the deadline passes or Cancel is called.
HttpStream::Wait HttpStream::WaitFor(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    if (cancelled()) return Wait::kCancelled;
    int timeout_ms = -1;
    if (deadline_ns != INT64_MAX) {
      const int64_t left = deadline_ns - MonotonicNanos();
      if (left <= 0) return Wait::kTimeout;
      timeout_ms = static_cast<int>(
          std::min<int64_t>((left + kNanosPerMilli - 1) / kNanosPerMilli, INT32_MAX));
    }
    pollfd fds[2] = {{fd, events, 0}, {event_fd_, POLLIN, 0}};
    const int n = ::poll(fds, event_fd_ >= 0 ? 2 : 1, timeout_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Wait::kError;
    }
    if (cancelled()) return Wait::kCancelled;
    if (n > 0 && fds[0].revents != 0) return Wait::kReady;  // readiness or an error/hang-up
  }
}

// The connected socket as Run uses it: plain, or through an OpenSSL client object. With TLS,
// OpenSSL reads and writes memory BIOs and this class moves their bytes to and from the
// socket itself (send with MSG_NOSIGNAL: a peer's reset must not raise SIGPIPE in a process
// that has not started the runtime, which ignores it). Every call blocks until it is done,
// `deadline` passes or the stream is cancelled; a wait that ends otherwise leaves its outcome in
// wait_failure() and returns a failure.
class HttpStream::Io {
 public:
  Io(HttpStream* owner, int fd) : owner_(owner), fd_(fd) {}
  ~Io() {
    if (ssl_ == nullptr) return;
    if (handshaken_) {
      // close_notify, best effort: what the socket takes now, no waiting.
      SSL_shutdown(ssl_);
      char buf[512];
      for (int n; (n = BIO_read(wbio_, buf, sizeof(buf))) > 0;) {
        if (::send(fd_, buf, static_cast<size_t>(n), MSG_NOSIGNAL | MSG_DONTWAIT) != n) break;
      }
    }
    SSL_free(ssl_);  // frees the BIOs too
  }
  Io(const Io&) = delete;
  Io& operator=(const Io&) = delete;

  Wait wait_failure() const { return wait_failure_; }

  bool Handshake(const TlsContext& ctx, const std::string& host, int64_t deadline,
                 std::string* err) {
    ssl_ = ctx.NewSsl(host);
    BIO* rbio = BIO_new(BIO_s_mem());
    BIO* wbio = BIO_new(BIO_s_mem());
    if (ssl_ == nullptr || rbio == nullptr || wbio == nullptr) {
      BIO_free(rbio);
      BIO_free(wbio);
      *err = "TLS: OpenSSL could not make a connection object: " + TakeOpenSslErrors();
      return false;
    }
    SSL_set_bio(ssl_, rbio, wbio);
    rbio_ = rbio;
    wbio_ = wbio;
    // ALPN, if the context offers it, is the context's; the response framing does not depend on
    // it (HTTP/1.1 either way).
    const int r = Drive([this] { return SSL_do_handshake(ssl_); }, deadline, err);
    if (r == 1) {
      handshaken_ = true;
      return true;
    }
    if (r == 0 && err->empty()) *err = "the peer closed the connection during the TLS handshake";
    if (const long v = SSL_get_verify_result(ssl_);
        v != X509_V_OK && wait_failure_ == Wait::kReady) {
      *err += std::string(" (certificate: ") + X509_verify_cert_error_string(v) + ")";
    }
    return false;
  }

  bool SendAll(std::string_view data, int64_t deadline, std::string* err) {
    if (ssl_ == nullptr) return SendRaw(data, deadline, err);
    while (!data.empty()) {
      const int chunk = static_cast<int>(std::min<size_t>(data.size(), 1 << 20));
      const int r = Drive([&] { return SSL_write(ssl_, data.data(), chunk); }, deadline, err);
      if (r <= 0) {
        if (r == 0 && err->empty()) *err = "connection closed";
        return false;
      }
      data.remove_prefix(static_cast<size_t>(r));
    }
    return true;
  }

  // Bytes (> 0), 0 at the end of the stream, or -1 (*err, or wait_failure()).
  ssize_t Recv(char* buf, size_t len, int64_t deadline, std::string* err) {
    if (ssl_ == nullptr) {
      for (;;) {
        const ssize_t n = ::recv(fd_, buf, len, 0);
        if (n >= 0) return n;
        if (errno == EINTR) continue;
        if (errno != EAGAIN) {
          *err = std::string("read: ") + std::strerror(errno);
          return -1;
        }
        if (!WaitFd(POLLIN, deadline)) return -1;
      }
    }
    const int want = static_cast<int>(std::min<size_t>(len, INT32_MAX));
    return Drive([&] { return SSL_read(ssl_, buf, want); }, deadline, err);
  }

 private:
  bool WaitFd(short events, int64_t deadline) {
    wait_failure_ = owner_->WaitFor(fd_, events, deadline);
    return wait_failure_ == Wait::kReady;
  }

  bool SendRaw(std::string_view data, int64_t deadline, std::string* err) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n > 0) {
        data.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) {
        *err = std::string("send: ") + std::strerror(errno);
        return false;
      }
      if (!WaitFd(POLLOUT, deadline)) return false;
    }
    return true;
  }

  // Sends everything OpenSSL has written into wbio_.
  bool Flush(int64_t deadline, std::string* err) {
    char buf[16 * 1024];
    for (int n; (n = BIO_read(wbio_, buf, sizeof(buf))) > 0;) {
      if (!SendRaw(std::string_view(buf, static_cast<size_t>(n)), deadline, err)) return false;
    }
    return true;
  }

  // Reads what the socket has (waiting for some) into rbio_; at the end of the stream, makes
  // rbio_ report it to OpenSSL.
  bool Fill(int64_t deadline, std::string* err) {
    char buf[16 * 1024];
    for (;;) {
      const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
      if (n > 0) {
        BIO_write(rbio_, buf, static_cast<int>(n));
        return true;
      }
      if (n == 0) {
        eof_ = true;
        BIO_set_mem_eof_return(rbio_, 0);
        return true;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        *err = std::string("read: ") + std::strerror(errno);
        return false;
      }
      if (!WaitFd(POLLIN, deadline)) return false;
    }
  }

  // Runs an OpenSSL call until it completes, moving bytes between the BIOs and the socket: its
  // result (> 0), 0 at a clean or unclean end of the peer's stream, -1 on failure.
  template <typename Op>
  int Drive(const Op& op, int64_t deadline, std::string* err) {
    for (;;) {
      ERR_clear_error();
      const int r = op();
      const int e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_, r);
      std::string why = e == SSL_ERROR_SSL ? TakeOpenSslErrors() : std::string();
      if (!Flush(deadline, err)) return -1;  // handshake messages, records, alerts
      switch (e) {
        case SSL_ERROR_NONE:
          return r;
        case SSL_ERROR_WANT_READ:
          if (eof_) return 0;
          if (!Fill(deadline, err)) return -1;
          continue;
        case SSL_ERROR_WANT_WRITE:  // memory BIOs take everything: not expected
          continue;
        case SSL_ERROR_ZERO_RETURN:
          return 0;
        default:
          // The peer's end of stream without close_notify reads as an end: the HTTP framing
          // (Content-Length, chunked) tells whether the response was whole.
          if (eof_ && handshaken_) return 0;
          *err = "TLS: " + (why.empty() ? std::string("the connection failed") : why);
          return -1;
      }
    }
  }

  HttpStream* owner_;
  int fd_;
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // owned by ssl_
  BIO* wbio_ = nullptr;  // owned by ssl_
  bool handshaken_ = false;
  bool eof_ = false;
  Wait wait_failure_ = Wait::kReady;
};

namespace {
// The text of a wait that did not end in readiness.
std::string WaitError(HttpStream::Wait w, const std::string& timeout_text) {
  switch (w) {
    case HttpStream::Wait::kCancelled:
      return "cancelled";
    case HttpStream::Wait::kTimeout:
      return timeout_text;
    default:
      return Errno("poll");
  }
}
}  // namespace

bool HttpStream::Run(const NetAddress& addr, const HttpStreamRequest& req, const OnHead& on_head,
                     const OnBody& on_body, std::string* err) {
  if (cancelled()) {
    *err = "cancelled";
    return false;
  }
  if (event_fd_ < 0) {
    *err = "eventfd failed";
    return false;
  }
  if (HasCtl(req.method) || HasCtl(req.target) || req.method.empty() || req.target.empty()) {
    *err = "bad request line";
    return false;
  }
  const int64_t total_deadline = DeadlineAfter(options_.total_timeout_ms);
  const std::string where = addr.ToString();

  // Connect (non-blocking, so that the timeout and Cancel apply).
  FdCloser sock{::socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) {
    *err = Errno("socket");
    return false;
  }
  const int on = 1;
  ::setsockopt(sock.fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
  // An endless response from a peer whose host vanished would block forever without a read
  // timeout: keepalive probes find it within about 10 + 3 * 5 s.
  ::setsockopt(sock.fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  const int idle = 10, intvl = 5, cnt = 3;
  ::setsockopt(sock.fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(sock.fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
  ::setsockopt(sock.fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
  if (::connect(sock.fd, addr.sockaddr_ptr(), addr.length()) != 0) {
    if (errno != EINPROGRESS) {
      *err = "connect " + where + ": " + std::strerror(errno);
      return false;
    }
    const int64_t deadline = std::min(total_deadline, DeadlineAfter(options_.connect_timeout_ms));
    if (const Wait w = WaitFor(sock.fd, POLLOUT, deadline); w != Wait::kReady) {
      *err = WaitError(w, "connect " + where + ": timed out");
      return false;
    }
    int so_error = 0;
    socklen_t len = sizeof(so_error);
    ::getsockopt(sock.fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
    if (so_error != 0) {
      *err = "connect " + where + ": " + std::strerror(so_error);
      return false;
    }
  }
  Io io(this, sock.fd);  // (declared after sock: its close_notify goes out before the close)
  if (options_.tls) {
    const int64_t deadline =
        std::min(total_deadline, DeadlineAfter(static_cast<uint32_t>(
                                     std::max<int64_t>(options_.tls->handshake_timeout_ms(), 1))));
    std::string why;
    if (!io.Handshake(*options_.tls, options_.tls_host.empty() ? addr.ip() : options_.tls_host,
                      deadline, &why)) {
      *err = io.wait_failure() != Wait::kReady
                 ? WaitError(io.wait_failure(), "TLS handshake with " + where + ": timed out")
                 : "TLS handshake with " + where + ": " + why;
      return false;
    }
  }

  // Send the request.
  std::string out = req.method + " " + req.target + " HTTP/1.1\r\nHost: " + where + "\r\n";
  for (const auto& [name, value] : req.headers) {
    if (HasCtl(name) || HasCtl(value) || name.empty()) {
      *err = "bad header field";
      return false;
    }
    out += name + ": " + value + "\r\n";
  }
  out += "Content-Length: " + std::to_string(req.body.size()) + "\r\n\r\n";
  out += req.body;
  {
    const int64_t deadline = std::min(total_deadline, DeadlineAfter(options_.read_timeout_ms));
    std::string why;
    if (!io.SendAll(out, deadline, &why)) {
      *err = io.wait_failure() != Wait::kReady
                 ? WaitError(io.wait_failure(), "send to " + where + ": timed out")
                 : "send to " + where + ": " + why;
      return false;
    }
  }

  // Read and frame the response, handing out the body as it comes.
  detail::ResponseLimits limits;
  limits.max_status_line = std::min(limits.max_status_line, options_.max_head_bytes);
  limits.max_header_bytes = options_.max_head_bytes;
  detail::ResponseParser parser(limits);
  parser.set_streaming(true);
  ChainBuffer in, body;
  std::string piece;
  std::string buf(std::max<size_t>(options_.max_piece_bytes, 1), '\0');
  bool head_given = false;
  for (;;) {
    const int64_t deadline = std::min(total_deadline, DeadlineAfter(options_.read_timeout_ms));
    std::string why;
    const ssize_t n = io.Recv(buf.data(), buf.size(), deadline, &why);
    if (n < 0) {
      *err = io.wait_failure() != Wait::kReady
                 ? WaitError(io.wait_failure(),
                             total_deadline <= MonotonicNanos() ? "timed out" : "read timeout")
                 : "read from " + where + ": " + why;
      return false;
    }
    const bool eof = n == 0;
    if (n > 0) in.Append(buf.data(), static_cast<size_t>(n));
    const auto r = parser.ParseStream(&in, eof, &body);
    if (r == detail::ResponseParser::Result::kError) {
      *err = "malformed response from " + where + ": " + parser.error();
      return false;
    }
    if (!head_given && parser.head_parsed()) {
      head_given = true;
      HttpStreamHead head;
      head.status = parser.head().status;
      head.headers = parser.head().headers;
      if (on_head && !on_head(head)) {
        *err = "stopped";
        return false;
      }
    }
    if (!body.empty()) {
      // At most one read's worth (the de-chunked body is never larger than its coding).
      piece = body.ToString();
      body.Clear();
      if (on_body && !on_body(piece)) {
        *err = "stopped";
        return false;
      }
    }
    if (r == detail::ResponseParser::Result::kComplete) return true;
    if (eof) {
      *err = "connection closed by " + where + " before a response";
      return false;
    }
  }
}

bool HttpStream::Fetch(const NetAddress& addr, const HttpStreamRequest& req, size_t max_body,
                       int* status, std::string* body, std::string* err) {
  body->clear();
  bool too_big = false;
  const bool ok = Run(
      addr, req,
      [&](const HttpStreamHead& head) {
        *status = head.status;
        return true;
      },
      [&](std::string_view piece) {
        if (piece.size() > max_body - body->size()) {
          too_big = true;
          return false;
        }
        body->append(piece);
        return true;
      },
      err);
  if (too_big) *err = "response body over " + std::to_string(max_body) + " bytes";
  return ok;
}

bool HttpFetch(const NetAddress& addr, const HttpStreamRequest& req,
               const HttpStreamOptions& options, size_t max_body, int* status, std::string* body,
               std::string* err) {
  return HttpStream(options).Fetch(addr, req, max_body, status, body, err);
}

}  // namespace trpc::http
