#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/transport/client_connection.h"

namespace trpc {

/// Keep-alive connections to one backend for a protocol that answers in order
/// (FrameCodec::FifoResponses: HTTP/1.1), where a connection carries one call at a time unless
/// the protocol pipelines. A call goes out on an idle connection; else on a new one while fewer
/// than `max_connections` exist; else pipelined behind the fewest calls on a connection with
/// fewer than `max_outstanding`; else it waits, in arrival order, until a response or a close
/// frees room (a wait that outlives the call's deadline fails with 101).
///
/// A connection the server closes ("Connection: close", EOF, reset) or that fails fails only
/// the calls it carried (141; 111 when it never connected) and leaves the pool; calls waiting
/// for room then get a new one. Callbacks run as ClientConnection's: exactly once, on the loop
/// thread.
///
/// Ownership: the pool owns its connections. Thread contract: loop-thread only, destruction
/// included (one pool per backend per reactor). Close() or destruction fails the calls that
/// still wait with 141 and closes the connections (failing theirs with 141).
class ClientConnectionPool {
 public:
  struct Options {
    size_t max_connections = 64;     // open at once (connecting ones included), >= 1
    uint32_t max_outstanding = 1;    // requests on the wire per connection, >= 1; 1 = no pipelining
    int64_t connect_timeout_ms = 0;  // see ClientConnection; 0 = none
    ConnectionOptions connection;
  };

  ClientConnectionPool(Reactor* reactor, const NetAddress& target, FrameCodec* codec,
                       const Options& options);
  ~ClientConnectionPool();
  ClientConnectionPool(const ClientConnectionPool&) = delete;
  ClientConnectionPool& operator=(const ClientConnectionPool&) = delete;

  /// As ClientConnection::Call (`request_id` unique among this pool's calls in flight).
  void Call(uint32_t request_id, ChainBuffer&& request, int64_t deadline_ns,
            ClientConnection::Done done);
  /// A one-way request: sent like a call whose response is dropped (it still takes a slot).
  void SendOneway(ChainBuffer&& request);
  /// Fails the waiting calls and closes every connection; later calls fail with 141.
  void Close(const std::string& reason);

  size_t connection_count() const { return conns_.size(); }
  /// Calls waiting for room (including ones whose wait timed out and that are not yet dropped).
  size_t waiting() const { return waiting_.size(); }
  const NetAddress& target() const { return target_; }

 private:
  struct Waiter {
    uint32_t request_id = 0;  // 0: one-way
    ChainBuffer request;
    int64_t deadline_ns = 0;
    ClientConnection::Done done;  // empty once the call has failed while waiting
    TimerId timer = 0;
    bool oneway = false;
  };

  // A connection with room, or a new one; null with `*st` OK when every one is full, or with
  // `*st` set when a new one could not even be started.
  ClientConnection* Pick(Status* st);
  ClientConnection* Open(Status* st);
  void Send(ClientConnection* c, Waiter* w);
  void Enqueue(std::unique_ptr<Waiter> w);
  void OnWaitTimeout(Waiter* w);
  // Hands waiting calls to connections with room, oldest first.
  void Dispatch();
  void OnConnectionClosed(ClientConnection* c);

  Reactor* reactor_;
  NetAddress target_;
  FrameCodec* codec_;
  Options options_;
  std::vector<ClientConnectionPtr> conns_;
  std::deque<std::unique_ptr<Waiter>> waiting_;
  bool dispatching_ = false;
  bool closed_ = false;
};

}  // namespace trpc
