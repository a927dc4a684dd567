#pragma once

#include <string>

#include "trpc/base/net_address.h"

namespace trpc {

/// Thin, errno-preserving wrappers over the socket calls the transport makes. Every fd is
/// non-blocking and close-on-exec. Functions return the fd or -errno.
namespace socket_ops {

int CreateTcpSocket(int family);
/// Socket bound to `addr` and listening; SO_REUSEADDR set.
int Listen(const NetAddress& addr, int backlog, std::string* err);
/// Starts a non-blocking connect. Returns the fd (connection may still be in progress) or -errno.
int Connect(const NetAddress& addr);
void SetNoDelay(int fd);
/// The pending error of a socket (SO_ERROR), 0 if none.
int GetSocketError(int fd);
NetAddress LocalAddress(int fd);

}  // namespace socket_ops
}  // namespace trpc
