#pragma once

#include <cstdint>

namespace trpc {

/// Something registered with a Reactor's poller (a connection, an acceptor, the wake-up fd).
/// HandleEvents runs on the reactor's thread with the epoll event bits. The owner keeps the
/// handler alive until the reactor has removed its fd and finished the current event batch.
class EventHandler {
 public:
  virtual ~EventHandler() = default;
  virtual void HandleEvents(uint32_t events) = 0;
};

}  // namespace trpc
