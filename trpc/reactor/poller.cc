#include "trpc/reactor/poller.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

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

int Poller::Remove(int fd) {
  return epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr) == 0 ? 0 : -errno;
}

namespace {
// epoll_pwait2 (Linux 5.11) gives nanosecond timeouts; older kernels (ENOSYS) and some seccomp
// profiles (EPERM) lack it, and then every poller falls back to epoll_wait's milliseconds.
std::atomic<bool> g_use_pwait2{true};
}  // namespace

int Poller::Wait(epoll_event* out, int max_events, int64_t timeout_ns) {
  int n;
  if (!g_use_pwait2.load(std::memory_order_relaxed)) {
    int ms =
        timeout_ns < 0
            ? -1
            : static_cast<int>(std::min<int64_t>((timeout_ns + 999'999) / 1'000'000, INT32_MAX));
    n = epoll_wait(epfd_, out, max_events, ms);
  } else if (timeout_ns < 0) {
    n = epoll_pwait2(epfd_, out, max_events, nullptr, nullptr);
  } else {
    timespec ts{static_cast<time_t>(timeout_ns / 1'000'000'000),
                static_cast<long>(timeout_ns % 1'000'000'000)};
    n = epoll_pwait2(epfd_, out, max_events, &ts, nullptr);
  }
  if (n < 0 && (errno == ENOSYS || errno == EPERM) &&
      g_use_pwait2.load(std::memory_order_relaxed)) {
    g_use_pwait2.store(false, std::memory_order_relaxed);
    TRPC_LOG_WARN("epoll_pwait2 unavailable ({}); using epoll_wait (1 ms timer resolution)",
                  strerror(errno));
    return Wait(out, max_events, timeout_ns);
  }
  if (n < 0) {
    if (errno != EINTR)
      TRPC_LOG_EVERY_MS(log::Level::kError, 1000, "epoll_pwait2: {}", strerror(errno));
    return 0;
  }
  return n;
}

}  // namespace trpc
