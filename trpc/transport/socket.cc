#include "trpc/transport/socket.h"

#include <errno.h>
#include <fmt/format.h>
#include <netinet/tcp.h>
#include <string.h>
#include <unistd.h>

namespace trpc::socket_ops {

int CreateTcpSocket(int family) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  return fd >= 0 ? fd : -errno;
}

int Listen(const NetAddress& addr, int backlog, std::string* err) {
  int fd = CreateTcpSocket(addr.family());
  if (fd < 0) {
    *err = fmt::format("socket: {}", strerror(-fd));
    return fd;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, addr.sockaddr_ptr(), addr.length()) != 0 || ::listen(fd, backlog) != 0) {
    int e = errno;
    *err = fmt::format("bind/listen {}: {}", addr.ToString(), strerror(e));
    ::close(fd);
    return -e;
  }
  return fd;
}

int Connect(const NetAddress& addr) {
  int fd = CreateTcpSocket(addr.family());
  if (fd < 0) return fd;
  if (::connect(fd, addr.sockaddr_ptr(), addr.length()) != 0 && errno != EINPROGRESS) {
    int e = errno;
    ::close(fd);
    return -e;
  }
  SetNoDelay(fd);
  return fd;
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int GetSocketError(int fd) {
  int e = 0;
  socklen_t len = sizeof(e);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) return errno;
  return e;
}

NetAddress LocalAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len);
}

}  // namespace trpc::socket_ops
