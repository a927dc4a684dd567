#pragma once

// Plain blocking sockets on 127.0.0.1 for the peer side of transport tests. Every wait is
// bounded by poll() with a deadline.

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/clock.h"
#include "trpc/base/net_address.h"

namespace trpc::testing {

/// A connected TCP pair on loopback: `server_fd` is non-blocking (for a Connection), `client_fd`
/// is blocking (the test plays the peer). Both -1 on failure. The caller owns both fds.
struct TcpPair {
  int server_fd = -1;
  int client_fd = -1;
  NetAddress client_addr;
};

inline TcpPair MakeTcpPair() {
  TcpPair p;
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (lfd < 0 || ::bind(lfd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(lfd, 1) != 0 || ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    if (lfd >= 0) ::close(lfd);
    return p;
  }
  p.client_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(p.client_fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    sockaddr_storage peer{};
    socklen_t peer_len = sizeof(peer);
    p.server_fd =
        ::accept4(lfd, reinterpret_cast<sockaddr*>(&peer), &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    p.client_addr = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&peer), peer_len);
  }
  ::close(lfd);
  if (p.server_fd < 0) {
    ::close(p.client_fd);
    p.client_fd = -1;
  }
  return p;
}

/// Writes all of `data` to a blocking socket. False on error (EPIPE, ECONNRESET, ...).
inline bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

enum class ReadStatus { kOk, kClosed, kTimeout };

/// Reads exactly `n` bytes into `*out` (appended) unless the peer closes (EOF or reset) or
/// `timeout_ms` passes first.
inline ReadStatus ReadExactly(int fd, size_t n, int64_t timeout_ms, std::string* out) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  size_t target = out->size() + n;
  char buf[64 * 1024];
  while (out->size() < target) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return ReadStatus::kTimeout;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return ReadStatus::kTimeout;
    size_t want = std::min(sizeof(buf), target - out->size());
    ssize_t got = ::recv(fd, buf, want, MSG_DONTWAIT);
    if (got > 0) {
      out->append(buf, static_cast<size_t>(got));
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
      return ReadStatus::kClosed;
    }
  }
  return ReadStatus::kOk;
}

/// Waits until the peer closes; bytes that arrive first are appended to `*received`. False if
/// the connection is still open after `timeout_ms`.
inline bool WaitForPeerClose(int fd, int64_t timeout_ms, std::string* received) {
  int64_t deadline = MonotonicMillis() + timeout_ms;
  char buf[64 * 1024];
  for (;;) {
    int64_t left = deadline - MonotonicMillis();
    if (left <= 0) return false;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return false;
    ssize_t got = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (got > 0) {
      received->append(buf, static_cast<size_t>(got));
    } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
      return true;
    }
  }
}

}  // namespace trpc::testing
