#include "trpc/transport/client_connection_pool.h"

#include <algorithm>

#include "trpc/base/logging.h"

namespace trpc {

ClientConnectionPool::ClientConnectionPool(Reactor* reactor, const NetAddress& target,
                                           FrameCodec* codec, const Options& options)
    : reactor_(reactor), target_(target), codec_(codec), options_(options) {
  options_.max_connections = std::max<size_t>(1, options_.max_connections);
  options_.max_outstanding = std::max<uint32_t>(1, options_.max_outstanding);
}

ClientConnectionPool::~ClientConnectionPool() { Close("connection pool destroyed"); }

void ClientConnectionPool::Call(uint32_t request_id, ChainBuffer&& request, int64_t deadline_ns,
                                ClientConnection::Done done) {
  reactor_->AssertInLoopThread();
  auto w = std::make_unique<Waiter>();
  w->request_id = request_id;
  w->request = std::move(request);
  w->deadline_ns = deadline_ns;
  w->done = std::move(done);
  if (closed_) {
    w->done(Status(kClientNetworkErr, "connection pool to " + target_.ToString() + " is closed"),
            ChainBuffer());
    return;
  }
  // Calls already waiting go first: room that frees up is theirs.
  while (!waiting_.empty() && !waiting_.front()->done && !waiting_.front()->oneway) {
    waiting_.pop_front();
  }
  if (!waiting_.empty()) {
    Enqueue(std::move(w));
    return;
  }
  Status st;
  ClientConnection* c = Pick(&st);
  if (c == nullptr) {
    if (!st.OK()) {
      w->done(std::move(st), ChainBuffer());
      return;
    }
    Enqueue(std::move(w));
    return;
  }
  Send(c, w.get());
}

void ClientConnectionPool::SendOneway(ChainBuffer&& request) {
  reactor_->AssertInLoopThread();
  if (closed_) return;
  auto w = std::make_unique<Waiter>();
  w->request = std::move(request);
  w->oneway = true;
  Status st;
  ClientConnection* c = waiting_.empty() ? Pick(&st) : nullptr;
  if (c != nullptr) {
    Send(c, w.get());
  } else if (st.OK()) {
    Enqueue(std::move(w));  // no deadline: it waits for room like the calls before it
  }
}

void ClientConnectionPool::Send(ClientConnection* c, Waiter* w) {
  if (w->oneway) {
    c->SendOneway(std::move(w->request));
  } else {
    c->Call(w->request_id, std::move(w->request), w->deadline_ns, std::move(w->done));
  }
}

ClientConnection* ClientConnectionPool::Pick(Status* st) {
  ClientConnection* best = nullptr;
  size_t best_outstanding = 0;
  for (const ClientConnectionPtr& c : conns_) {
    if (!c->usable()) continue;
    const size_t n = c->outstanding();
    if (n == 0) return c.get();
    if (n < options_.max_outstanding && (best == nullptr || n < best_outstanding)) {
      best = c.get();
      best_outstanding = n;
    }
  }
  // A new connection before pipelining: a pipelined call waits behind another's response.
  if (conns_.size() < options_.max_connections) return Open(st);
  return best;
}

ClientConnection* ClientConnectionPool::Open(Status* st) {
  auto c = std::make_shared<ClientConnection>(reactor_, target_, codec_, options_.connection,
                                              options_.connect_timeout_ms);
  std::string err;
  if (!c->Connect(&err)) {
    *st = Status(kClientConnectErr, err);
    return nullptr;
  }
  if (!c->usable()) {  // failed at once (registering with the poller)
    *st = Status(kClientConnectErr, "cannot connect to " + target_.ToString());
    return nullptr;
  }
  // `this` is safe: Close() clears both callbacks before it lets a connection go.
  c->set_close_callback([this](ClientConnection* closed) { OnConnectionClosed(closed); });
  c->set_slot_free_callback([this](ClientConnection*) { Dispatch(); });
  conns_.push_back(std::move(c));
  return conns_.back().get();
}

void ClientConnectionPool::Enqueue(std::unique_ptr<Waiter> w) {
  Waiter* raw = w.get();
  if (!w->oneway) {
    raw->timer = reactor_->AddTimer(raw->deadline_ns, [this, raw] { OnWaitTimeout(raw); });
  }
  waiting_.push_back(std::move(w));
}

void ClientConnectionPool::OnWaitTimeout(Waiter* w) {
  // The waiter stays queued (emptied) until it reaches the front: no search of the queue.
  w->timer = 0;
  ClientConnection::Done done = std::move(w->done);
  w->done = nullptr;
  w->request.Clear();
  done(Status(kClientInvokeTimeoutErr,
              "request timed out waiting for a connection to " + target_.ToString()),
       ChainBuffer());
}

void ClientConnectionPool::Dispatch() {
  // A callback run from here may call back in (Call, a slot freed by a synchronous failure):
  // the loop below sees what it changed on its next round.
  if (dispatching_ || closed_) return;
  dispatching_ = true;
  while (!waiting_.empty()) {
    Waiter* w = waiting_.front().get();
    if (!w->done && !w->oneway) {  // failed while waiting
      waiting_.pop_front();
      continue;
    }
    Status st;
    ClientConnection* c = Pick(&st);
    if (c == nullptr && st.OK()) break;  // still no room
    std::unique_ptr<Waiter> owned = std::move(waiting_.front());
    waiting_.pop_front();
    if (owned->timer != 0) reactor_->CancelTimer(owned->timer);
    if (c != nullptr) {
      Send(c, owned.get());
    } else if (owned->done) {
      owned->done(std::move(st), ChainBuffer());
    }
    if (closed_) break;
  }
  dispatching_ = false;
}

void ClientConnectionPool::OnConnectionClosed(ClientConnection* c) {
  auto it = std::find_if(conns_.begin(), conns_.end(),
                         [c](const ClientConnectionPtr& p) { return p.get() == c; });
  if (it != conns_.end()) {
    // The connection keeps itself alive until its OnClose returns.
    std::swap(*it, conns_.back());
    conns_.pop_back();
  }
  Dispatch();
}

void ClientConnectionPool::Close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& w : waiting) {
    if (w->timer != 0) reactor_->CancelTimer(w->timer);
    if (w->done) w->done(Status(kClientNetworkErr, reason), ChainBuffer());
  }
  auto conns = std::move(conns_);
  conns_.clear();
  for (auto& c : conns) {
    c->set_close_callback(nullptr);
    c->set_slot_free_callback(nullptr);
    c->Close(reason);
  }
}

}  // namespace trpc
