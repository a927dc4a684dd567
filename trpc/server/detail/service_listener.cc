#include "trpc/server/detail/service_listener.h"

#include <unistd.h>

#include <latch>

#include "trpc/base/logging.h"
#include "trpc/server/detail/run_on_reactors.h"

namespace trpc::detail {

ServiceListener::ServiceListener(const ServiceConfig& config, ThreadModel* model,
                                 ServerCodec* codec, Connection::Handler* handler,
                                 ServiceCounters* counters)
    : config_(config),
      model_(model),
      codec_(codec),
      handler_(handler),
      counters_(counters),
      accept_reactor_(model->GetReactor(0)),
      conns_(model->ReactorCount()) {
  conn_options_.max_packet_size = config.max_packet_size;
  conn_options_.max_pending_write_bytes = config.max_pending_write_bytes;
  conn_options_.idle_timeout_ms = config.idle_time;
  conn_options_.frame_read_timeout_ms = config.read_frame_timeout;
  conn_options_.max_pending_requests = config.max_pending_requests;
  acceptor_ = std::make_unique<Acceptor>(
      accept_reactor_, [this](int fd, const NetAddress& peer) { OnNewConnection(fd, peer); });
}

ServiceListener::~ServiceListener() {
  if (budget_) budget_->DropSlots(this);
}

void ServiceListener::SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
  budget_ = std::move(budget);
  budget_slots_.clear();
  for (size_t i = 0; budget_ && i < model_->ReactorCount(); ++i) {
    budget_slots_.push_back(budget_->NewSlot(model_->GetReactor(i), this));
  }
}

bool ServiceListener::Start(std::string* err) {
  if (config_.ssl.enable) {
    // Loaded before listening: a bad certificate stops the start, not the first handshake.
    conn_options_.tls = TlsContext::Create(config_.ssl, TlsRole::kServer, codec_->Alpn(), err);
    if (conn_options_.tls == nullptr) {
      *err += " (service " + config_.name + ")";
      return false;
    }
  } else {
    conn_options_.detect_tls = true;
  }
  NetAddress addr;
  if (!NetAddress::FromIpPort(config_.ip, config_.port, &addr)) {
    *err = "service " + config_.name + ": bad ip '" + config_.ip + "'";
    return false;
  }
  if (!acceptor_->Listen(addr, err)) {
    *err = "service " + config_.name + ": " + *err;
    return false;
  }
  std::latch done(1);
  accept_reactor_->RunInLoop([&] {
    acceptor_->Start();
    done.count_down();
  });
  done.wait();
  started_ = true;
  TRPC_LOG_INFO("service {} listening on {}{} ({} model, {} workers)", config_.name,
                acceptor_->address().ToString(), config_.ssl.enable ? " with TLS" : "",
                model_->Type(), model_->ReactorCount());
  return true;
}

void ServiceListener::StopAccepting(int64_t deadline_ns) {
  if (!started_ || accepting_stopped_) return;
  accepting_stopped_ = true;
  size_t index = static_cast<size_t>(model_->IndexOf(accept_reactor_));
  if (!RunOnReactorsUntil(
          model_, {index}, [this](size_t) { acceptor_->Stop(); }, deadline_ns)[index]) {
    TRPC_LOG_ERROR(
        "service {}: its accepting worker is stuck in a handler: the listening socket stays "
        "open until the process exits",
        config_.name);
  }
}

void ServiceListener::EvictIdleWhenFull() {
  TRPC_CHECK(model_->ReactorCount() == 1, "EvictIdleWhenFull needs a one-reactor model");
  evict_when_full_ = true;
}

bool ServiceListener::EvictLeastActive() {
  // The least recently active: a silent connection, or one idle between requests, goes before
  // one that has just sent its request (a /health probe that came in a moment ago).
  ConnectionPtr victim;
  for (const auto& [raw, conn] : conns_[0]) {
    if (conn->closed() || conn->pending_requests() > 0) continue;
    if (!victim || conn->last_active_ns() < victim->last_active_ns()) victim = conn;
  }
  if (!victim) return false;
  counters_->CountRefused();
  TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                    "service {}: max_conn_num {} reached: closing the least recently active "
                    "connection ({}) to take a new one",
                    config_.name, config_.max_conn_num, victim->peer().ToString());
  victim->Close("max_conn_num reached: made room for a new connection", CloseCause::kLocal);
  return true;
}

void ServiceListener::OnNewConnection(int fd, const NetAddress& peer) {
  // Counted here, on the accepting thread, so the limit holds before the fd reaches a worker.
  if (conn_count_.load(std::memory_order_relaxed) >= config_.max_conn_num &&
      !(evict_when_full_ && EvictLeastActive())) {
    counters_->CountRefused();
    ::close(fd);
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: refusing {}: max_conn_num {} reached",
                      config_.name, peer.ToString(), config_.max_conn_num);
    return;
  }
  conn_count_.fetch_add(1, std::memory_order_relaxed);
  counters_->CountAccepted();
  Reactor* r = model_->NextReactor();
  size_t index = static_cast<size_t>(model_->IndexOf(r));
  r->RunInLoop([this, r, index, fd, peer] {
    ConnectionOptions options = conn_options_;
    options.traffic = counters_->traffic(index);
    if (!budget_slots_.empty()) options.budget = budget_slots_[index];
    auto conn = std::make_shared<Connection>(r, fd, peer, codec_, handler_, options);
    conns_[index].emplace(conn.get(), conn);
    conn->Start();
  });
}

void ServiceListener::Forget(Connection* conn) {
  conn_count_.fetch_sub(1, std::memory_order_relaxed);
  // The connection keeps itself alive until its event returns.
  conns_[static_cast<size_t>(model_->IndexOf(conn->reactor()))].erase(conn);
}

ServiceListener::ConnectionTable ServiceListener::TakeConnections(size_t reactor) {
  ConnectionTable taken = std::move(conns_[reactor]);
  conns_[reactor].clear();
  return taken;
}

}  // namespace trpc::detail
