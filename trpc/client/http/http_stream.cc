#include "trpc/client/http/http_stream.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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
    switch (WaitFor(sock.fd, POLLOUT, deadline)) {
      case Wait::kReady:
        break;
      case Wait::kCancelled:
        *err = "cancelled";
        return false;
      case Wait::kTimeout:
        *err = "connect " + where + ": timed out";
        return false;
      case Wait::kError:
        *err = Errno("poll");
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
  const int64_t io_deadline_base = options_.read_timeout_ms;
  for (size_t sent = 0; sent < out.size();) {
    const ssize_t n = ::send(sock.fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) {
      *err = "send to " + where + ": " + std::strerror(errno);
      return false;
    }
    const int64_t deadline = std::min(total_deadline, DeadlineAfter(io_deadline_base));
    const Wait w = WaitFor(sock.fd, POLLOUT, deadline);
    if (w == Wait::kCancelled) {
      *err = "cancelled";
      return false;
    }
    if (w != Wait::kReady) {
      *err = "send to " + where + ": timed out";
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
    switch (WaitFor(sock.fd, POLLIN, deadline)) {
      case Wait::kReady:
        break;
      case Wait::kCancelled:
        *err = "cancelled";
        return false;
      case Wait::kTimeout:
        *err = total_deadline <= MonotonicNanos() ? "timed out" : "read timeout";
        return false;
      case Wait::kError:
        *err = Errno("poll");
        return false;
    }
    const ssize_t n = ::recv(sock.fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      *err = "read from " + where + ": " + std::strerror(errno);
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
