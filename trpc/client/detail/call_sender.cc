#include "trpc/client/detail/call_sender.h"

#include <algorithm>

#include "trpc/codec/detail/codec.h"
#include "trpc/runtime/detail/thread_model.h"

namespace trpc::detail {

CallSender::CallSender(ThreadModel* model, ClientCodec* codec, Options options)
    : model_(model),
      codec_(codec),
      options_(std::move(options)),
      short_conns_(model->ReactorCount()) {}

CallSender::~CallSender() {
  if (buffer_budget_) buffer_budget_->DropSlots(this);
}

void CallSender::SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
  if (buffer_budget_) buffer_budget_->DropSlots(this);
  buffer_budget_ = std::move(budget);
  budget_slots_.clear();
  for (size_t i = 0; buffer_budget_ && i < model_->ReactorCount(); ++i) {
    budget_slots_.push_back(buffer_budget_->NewSlot(model_->GetReactor(i), this));
  }
}

ConnectionOptions CallSender::OptionsFor(size_t index, const NetAddress& addr) const {
  ConnectionOptions o = options_.connection;
  if (!budget_slots_.empty()) o.budget = budget_slots_[index];
  if (o.tls != nullptr && o.tls_host.empty()) o.tls_host = addr.ip();
  return o;
}

void CallSender::Send(Reactor* reactor, std::shared_ptr<OutgoingCall> call) {
  if (reactor->InLoopThread()) {
    SendOnLoop(static_cast<size_t>(model_->IndexOf(reactor)), std::move(call));
    return;
  }
  reactor->Post([this, reactor, call = std::move(call)]() mutable {
    SendOnLoop(static_cast<size_t>(model_->IndexOf(reactor)), std::move(call));
  });
}

void CallSender::SendOnLoop(size_t index, std::shared_ptr<OutgoingCall> call) {
  OutgoingCall* c = call.get();
  const bool oneway = c->call_type == kOnewayCall;
  c->sent = true;
  if (c->cancelled != nullptr) [[unlikely]] {
    if (!oneway) c->OnReply(*c->cancelled, ChainBuffer());
    return;
  }
  if (stopped()) {
    if (!oneway) c->OnReply(Status(kClientNetworkErr, "proxy stopped"), ChainBuffer());
    return;
  }
  if (options_.fifo && !options_.short_conn) {
    ClientConnectionPool* pool = GetPool(index, c->backend.get());
    if (oneway) {
      pool->SendOneway(std::move(c->request));
      return;
    }
    pool->Call(c->request_id, std::move(c->request), c->deadline_ns,
               [call = std::move(call)](Status st, ChainBuffer&& frame) {
                 call->OnReply(std::move(st), std::move(frame));
               });
    return;
  }
  Status st;
  ClientConnectionPtr conn = GetConnection(index, c->backend.get(), c->slot, &st);
  if (conn == nullptr) {
    if (!oneway) c->OnReply(std::move(st), ChainBuffer());
    return;
  }
  if (oneway) {
    conn->SendOneway(std::move(c->request));
    if (options_.short_conn) conn->CloseAfterFlush();
    return;
  }
  c->conn = conn;
  // A short connection closes when its call completes (short_conns_ owns it until then).
  ClientConnection* close_when_done = options_.short_conn ? conn.get() : nullptr;
  conn->Call(c->request_id, std::move(c->request), c->deadline_ns,
             [call = std::move(call), close_when_done](Status st, ChainBuffer&& frame) {
               call->OnReply(std::move(st), std::move(frame));
               if (close_when_done) close_when_done->Close("short connection done");
             });
}

bool CallSender::Cancel(OutgoingCall& call) {
  ClientConnectionPtr conn = call.conn.lock();
  return conn != nullptr && conn->Cancel(call.request_id);
}

void CallSender::WithConnection(Reactor* reactor, BackendPtr b, size_t slot,
                                std::function<void(ClientConnection*, const Status&)> fn) {
  const size_t index = static_cast<size_t>(model_->IndexOf(reactor));
  reactor->RunInLoop([this, index, b = std::move(b), slot, fn = std::move(fn)] {
    if (stopped()) {
      fn(nullptr, Status(kClientNetworkErr, "proxy stopped"));
      return;
    }
    if (options_.short_conn || options_.fifo) {
      fn(nullptr, Status(kClientEncodeErr,
                         "streams need a multiplexed connection (conn_type: long, a protocol "
                         "with request ids)"));
      return;
    }
    Status st;
    ClientConnectionPtr c = GetConnection(index, b.get(), slot, &st);
    fn(c.get(), st);
  });
}

ClientConnectionPtr CallSender::GetConnection(size_t index, Backend* b, size_t slot, Status* st) {
  if (!options_.short_conn) {
    ClientConnectionPtr& c = b->conns[index][slot];
    if (c && c->usable()) return c;
    c = Connect(index, b->addr, st);
    return c;
  }
  // conn_type "short": a connection per call, owned by short_conns_ until it closes.
  ClientConnectionPtr c = Connect(index, b->addr, st);
  if (c) {
    auto& table = short_conns_[index];
    table.emplace(c.get(), c);
    c->set_close_callback([&table](ClientConnection* closed) { table.erase(closed); });
  }
  return c;
}

ClientConnectionPtr CallSender::Connect(size_t index, const NetAddress& addr, Status* st) {
  auto c = std::make_shared<ClientConnection>(model_->GetReactor(index), addr, codec_,
                                              OptionsFor(index, addr), options_.connect_timeout_ms);
  std::string err;
  if (!c->Connect(&err)) {
    *st = Status(kClientConnectErr, err);
    return nullptr;
  }
  return c;
}

ClientConnectionPool* CallSender::GetPool(size_t index, Backend* b) {
  std::unique_ptr<ClientConnectionPool>& pool = b->pools[index];
  if (!pool) {
    ClientConnectionPool::Options o;
    o.max_connections = options_.conns_per_backend;
    o.max_outstanding = std::max<uint32_t>(1, options_.pipeline_depth);
    o.connect_timeout_ms = options_.connect_timeout_ms;
    o.connection = OptionsFor(index, b->addr);
    pool = std::make_unique<ClientConnectionPool>(model_->GetReactor(index), b->addr, codec_, o);
  }
  return pool.get();
}

void CallSender::CloseOnLoop(size_t index, const std::vector<BackendPtr>& alive) {
  for (const auto& b : alive) {
    for (auto& c : b->conns[index]) {
      if (c) c->Close("proxy stopped");
      c.reset();
    }
    if (b->pools[index]) b->pools[index]->Close("proxy stopped");
    b->pools[index].reset();
  }
  auto shorts = std::move(short_conns_[index]);
  short_conns_[index].clear();
  for (auto& [raw, c] : shorts) c->Close("proxy stopped");
}

}  // namespace trpc::detail
