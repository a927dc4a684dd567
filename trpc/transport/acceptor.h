#pragma once

#include <functional>
#include <string>

#include "trpc/reactor/event_handler.h"
#include "trpc/reactor/reactor.h"
#include "trpc/base/net_address.h"

namespace trpc {

/// Accepts TCP connections on one listening socket, on one reactor's thread, and hands each new
/// fd to a callback (which owns it from then on). Loop-thread only after Start().
class Acceptor : public EventHandler {
 public:
  using NewConnectionCallback = std::function<void(int fd, const NetAddress& peer)>;

  Acceptor(Reactor* reactor, NewConnectionCallback cb);
  ~Acceptor() override;

  /// Binds and listens (any thread, before Start). `addr` may have port 0.
  bool Listen(const NetAddress& addr, std::string* err);
  /// The bound address (with the real port when port 0 was asked for).
  const NetAddress& address() const { return bound_; }
  /// Registers with the reactor (loop thread).
  void Start();
  /// Stops accepting and closes the listening socket (loop thread).
  void Stop();

  void HandleEvents(uint32_t events) override;

 private:
  Reactor* reactor_;
  NewConnectionCallback cb_;
  int listen_fd_ = -1;
  int idle_fd_ = -1;  // reserve fd for the EMFILE trick
  TimerId retry_timer_ = 0;
  NetAddress bound_;
};

}  // namespace trpc
