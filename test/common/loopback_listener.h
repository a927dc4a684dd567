#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>

namespace trpc::testing {

/// A listening TCP socket on 127.0.0.1, port 0 (the kernel picks one, told in `*port`), for a
/// test's own fake peer. -1 when the socket could not be set up.
inline int ListenOnLoopback(uint16_t* port, int backlog = 64) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::listen(fd, backlog) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  *port = ntohs(a.sin_port);
  return fd;
}

/// A loopback port nobody listened on a moment ago: for a peer program that cannot take port 0,
/// or a target that refuses connections. 0 when no socket could be set up.
inline uint16_t FreeLoopbackPort() {
  uint16_t port = 0;
  const int fd = ListenOnLoopback(&port);
  if (fd < 0) return 0;
  ::close(fd);
  return port;
}

/// Whether a connection to 127.0.0.1:`port` is accepted now (a peer program has started).
inline bool LoopbackPortAccepts(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace trpc::testing
