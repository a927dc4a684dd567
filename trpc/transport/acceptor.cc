#include "trpc/transport/acceptor.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/transport/socket.h"

namespace trpc {

Acceptor::Acceptor(Reactor* reactor, NewConnectionCallback cb)
    : reactor_(reactor), cb_(std::move(cb)), idle_fd_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {}

Acceptor::~Acceptor() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (idle_fd_ >= 0) ::close(idle_fd_);
}

bool Acceptor::Listen(const NetAddress& addr, std::string* err) {
  int fd = socket_ops::Listen(addr, SOMAXCONN, err);
  if (fd < 0) return false;
  listen_fd_ = fd;
  bound_ = socket_ops::LocalAddress(fd);
  return true;
}

void Acceptor::Start() {
  reactor_->AssertInLoopThread();
  TRPC_CHECK(reactor_->poller().Add(listen_fd_, EPOLLIN, this) == 0, "register listener");
}

void Acceptor::Stop() {
  reactor_->AssertInLoopThread();
  if (listen_fd_ < 0) return;
  reactor_->poller().Remove(listen_fd_);
  ::close(listen_fd_);
  listen_fd_ = -1;
  if (retry_timer_ != 0) {
    reactor_->CancelTimer(retry_timer_);
    retry_timer_ = 0;
  }
}

void Acceptor::HandleEvents(uint32_t) {
  while (listen_fd_ >= 0) {
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      socket_ops::SetNoDelay(fd);
      cb_(fd, NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len));
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    if (errno == EINTR || errno == ECONNABORTED) continue;
    if ((errno == EMFILE || errno == ENFILE) && idle_fd_ >= 0) {
      // Out of fds: the pending connection would keep the (edge-triggered) listener readable
      // forever. Free the reserve fd, accept and close the peer, then take the reserve back.
      // The trick is from muduo's Acceptor (Chen Shuo, "Linux multithreaded server programming").
      ::close(idle_fd_);
      int victim = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (victim >= 0) ::close(victim);
      idle_fd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
      TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "accept: out of file descriptors");
      continue;
    }
    // ENOBUFS, ENOMEM, EMFILE without a reserve fd...: connections may still wait in the backlog
    // and, edge-triggered, no new event would come for them. Try again shortly.
    TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "accept: {}; retrying in 10 ms", strerror(errno));
    if (retry_timer_ == 0) {
      retry_timer_ = reactor_->AddTimer(MonotonicNanos() + 10 * kNanosPerMilli, [this] {
        retry_timer_ = 0;
        HandleEvents(EPOLLIN);
      });
    }
    return;
  }
}

}  // namespace trpc
