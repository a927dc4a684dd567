#pragma once

#include <sys/epoll.h>

#include <cstdint>

#include "trpc/reactor/event_handler.h"

namespace trpc {

/// Edge-triggered epoll. Owned by one Reactor; Add/Modify/Remove are thread-safe (epoll_ctl is),
/// Wait is called by the reactor thread only.
class Poller {
 public:
  Poller();
  ~Poller();
  Poller(const Poller&) = delete;
  Poller& operator=(const Poller&) = delete;

  /// Registers `fd` edge-triggered for `events` (EPOLLIN/EPOLLOUT/...). Returns 0 or -errno.
  int Add(int fd, uint32_t events, EventHandler* handler);
  int Modify(int fd, uint32_t events, EventHandler* handler);
  int Remove(int fd);

  /// Waits up to `timeout_ns` (-1 = forever, 0 = poll) with nanosecond precision (epoll_pwait2).
  /// Returns the number of events in `out`, 0 on timeout or EINTR.
  int Wait(epoll_event* out, int max_events, int64_t timeout_ns);

 private:
  int epfd_;
};

}  // namespace trpc
