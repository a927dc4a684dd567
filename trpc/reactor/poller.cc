#include "trpc/reactor/poller.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "trpc/base/logging.h"

namespace trpc {

Poller::Poller() : epfd_(epoll_create1(EPOLL_CLOEXEC)) {
  TRPC_CHECK(epfd_ >= 0, "epoll_create1: {}", strerror(errno));
}

Poller::~Poller() { ::close(epfd_); }

int Poller::Add(int fd, uint32_t events, EventHandler* handler) {
  epoll_event ev{};
  ev.events = events | EPOLLET;
  ev.data.ptr = handler;
  return epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

int Poller::Modify(int fd, uint32_t events, EventHandler* handler) {
  epoll_event ev{};
  ev.events = events | EPOLLET;
  ev.data.ptr = handler;
  return epoll_ctl(epfd_, EPOLL_CTL_MOD, fd, &ev) == 0 ? 0 : -errno;
}

int Poller::Remove(int fd) { return epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) == 0 ? 0 : -errno; }

int Poller::Wait(epoll_event* out, int max_events, int64_t timeout_ns) {
  int n;
  if (timeout_ns < 0) {
    n = epoll_pwait2(epfd_, out, max_events, nullptr, nullptr);
  } else {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                static_cast<long>(timeout_ns % 1'000'000'000)};
    n = epoll_pwait2(epfd_, out, max_events, &ts, nullptr);
  }
  if (n < 0) {
    if (errno != EINTR) TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "epoll_pwait2: {}", strerror(errno));
    return 0;
  }
  return n;
}

}  // namespace trpc
