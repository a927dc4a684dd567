#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "trpc/base/net_address.h"
#include "trpc/reactor/event_handler.h"
#include "trpc/reactor/reactor.h"

namespace trpc {

/// Accepts TCP connections on one listening socket, on one reactor's thread, and hands each new
/// fd to a callback (which owns it from then on). Loop-thread only after Start().
///
/// An accept error that would only repeat if tried again at once (out of descriptors: EMFILE,
/// ENFILE; out of memory: ENOBUFS, ENOMEM; anything unknown) stops accepting for a back-off: the
/// listening socket leaves the poller, so no event can make the loop spin on it, and a timer
/// tries again after 10 ms, doubling up to 100 ms while the error lasts; a successful accept
/// resets it. Connections waiting in the backlog meanwhile are left there: they are accepted
/// when the fault ends (see docs/architecture.md, "Connections").
class Acceptor : public EventHandler {
 public:
  using NewConnectionCallback = std::function<void(int fd, const NetAddress& peer)>;

  /// The first back-off, and the longest one.
  static constexpr int64_t kFirstBackoffMs = 10;
  static constexpr int64_t kMaxBackoffMs = 100;

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
  /// Back-offs taken so far (any thread; relaxed: a statistic).
  uint64_t backoffs() const { return backoffs_.load(std::memory_order_relaxed); }

  void HandleEvents(uint32_t events) override;

 private:
  void BackOff(int err);
  void Retry();

  Reactor* reactor_;
  NewConnectionCallback cb_;
  int listen_fd_ = -1;
  bool registered_ = false;  // listen_fd_ is in the poller
  TimerId retry_timer_ = 0;
  int64_t backoff_ms_ = 0;  // the last back-off; 0 after a successful accept
  std::atomic<uint64_t> backoffs_{0};
  NetAddress bound_;
};

}  // namespace trpc
