#include "trpc/transport/acceptor.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/transport/socket.h"

namespace trpc {

namespace {
// Accepts per event before the acceptor lets the loop serve its other work (a flood of
// connections must not starve the established ones of this reactor).
constexpr int kAcceptsPerEvent = 256;

// Errors of one pending connection (it is gone once reported): accepting the next one may work.
bool ConnectionError(int err) {
  switch (err) {
    case EINTR:
    case ECONNABORTED:
    case EPROTO:
    case EPERM:  // a firewall rule refused this connection
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
    default:
      return false;
  }
}
}  // namespace

Acceptor::Acceptor(Reactor* reactor, NewConnectionCallback cb)
    : reactor_(reactor), cb_(std::move(cb)) {}

Acceptor::~Acceptor() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
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
  registered_ = true;
}

void Acceptor::Stop() {
  reactor_->AssertInLoopThread();
  if (listen_fd_ < 0) return;
  if (registered_) reactor_->poller().Remove(listen_fd_);
  registered_ = false;
  ::close(listen_fd_);
  listen_fd_ = -1;
  if (retry_timer_ != 0) {
    reactor_->CancelTimer(retry_timer_);
    retry_timer_ = 0;
  }
}

void Acceptor::HandleEvents(uint32_t) {
  for (int accepted = 0; listen_fd_ >= 0 && registered_;) {
    if (accepted == kAcceptsPerEvent) {
      // Edge-triggered: no new event comes for the connections still waiting, so go on from a
      // timer due at once (cancelled by Stop(), unlike a posted task).
      if (retry_timer_ == 0) {
        retry_timer_ = reactor_->AddTimer(reactor_->LoopTimeNs(), [this] { Retry(); });
      }
      return;
    }
    sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    int fd =
        ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      ++accepted;
      backoff_ms_ = 0;
      socket_ops::SetNoDelay(fd);
      cb_(fd, NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&ss), len));
      continue;
    }
    int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    if (ConnectionError(err)) {
      ++accepted;  // counts against the budget too: it consumed a pending connection
      continue;
    }
    BackOff(err);
    return;
  }
}

void Acceptor::BackOff(int err) {
  // Linux checks for a free descriptor before it looks at the backlog, so EMFILE comes back even
  // with nothing pending: trying again now would spin. Leave the poller (nothing can wake us for
  // this socket) and try again later.
  if (registered_) reactor_->poller().Remove(listen_fd_);
  registered_ = false;
  backoff_ms_ = backoff_ms_ == 0 ? kFirstBackoffMs : std::min(backoff_ms_ * 2, kMaxBackoffMs);
  backoffs_.fetch_add(1, std::memory_order_relaxed);
  TRPC_LOG_EVERY_MS(log::Level::kError, 1000,
                    "accept on {}: {}; not accepting for {} ms (established connections are "
                    "still served)",
                    bound_.ToString(), strerror(err), backoff_ms_);
  if (retry_timer_ != 0) reactor_->CancelTimer(retry_timer_);
  retry_timer_ =
      reactor_->AddTimer(MonotonicNanos() + backoff_ms_ * kNanosPerMilli, [this] { Retry(); });
}

void Acceptor::Retry() {
  retry_timer_ = 0;
  if (listen_fd_ < 0) return;
  if (!registered_) {
    int rc = reactor_->poller().Add(listen_fd_, EPOLLIN, this);
    if (rc != 0) {
      BackOff(-rc);
      return;
    }
    registered_ = true;
  }
  // Connections that came while we were away raise no new edge: accept them now.
  HandleEvents(EPOLLIN);
}

}  // namespace trpc
