#include "trpc/server/detail/service_adapter.h"

#include <unistd.h>

#include <latch>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc::detail {

ServiceAdapter::ServiceAdapter(const ServiceConfig& config, ServicePtr service, ThreadModel* model,
                               std::shared_ptr<ServerCodec> codec)
    : config_(config),
      service_(std::move(service)),
      model_(model),
      codec_(std::move(codec)),
      accept_reactor_(model->GetReactor(0)),
      conns_(model->ReactorCount()) {
  conn_options_.max_packet_size = config.max_packet_size;
  conn_options_.max_pending_write_bytes = config.max_pending_write_bytes;
  conn_options_.idle_timeout_ms = config.idle_time;
  acceptor_ = std::make_unique<Acceptor>(
      accept_reactor_, [this](int fd, const NetAddress& peer) { OnNewConnection(fd, peer); });
}

ServiceAdapter::~ServiceAdapter() { Stop(); }

bool ServiceAdapter::Start(std::string* err) {
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
  TRPC_LOG_INFO("service {} listening on {} ({} model, {} workers)", config_.name,
                acceptor_->address().ToString(), model_->Type(), model_->ReactorCount());
  return true;
}

void ServiceAdapter::RunOnEveryReactor(const std::function<void(size_t)>& fn) {
  std::latch done(static_cast<std::ptrdiff_t>(model_->ReactorCount()));
  for (size_t i = 0; i < model_->ReactorCount(); ++i) {
    model_->GetReactor(i)->RunInLoop([&, i] {
      fn(i);
      done.count_down();
    });
  }
  done.wait();
}

void ServiceAdapter::Stop() {
  if (!started_) return;
  started_ = false;
  std::latch stopped(1);
  accept_reactor_->RunInLoop([&] {
    acceptor_->Stop();
    stopped.count_down();
  });
  stopped.wait();
  RunOnEveryReactor([this](size_t i) {
    auto conns = std::move(conns_[i]);
    conns_[i].clear();
    for (auto& [raw, conn] : conns) conn->Close("server stopping");
  });
}

void ServiceAdapter::OnNewConnection(int fd, const NetAddress& peer) {
  // Counted here, on the accepting thread, so the limit holds before the fd reaches a worker.
  if (conn_count_.load(std::memory_order_relaxed) >= config_.max_conn_num) {
    ::close(fd);
    stats_.connections_refused.fetch_add(1, std::memory_order_relaxed);
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: refusing {}: max_conn_num {} reached",
                      config_.name, peer.ToString(), config_.max_conn_num);
    return;
  }
  conn_count_.fetch_add(1, std::memory_order_relaxed);
  stats_.connections_accepted.fetch_add(1, std::memory_order_relaxed);
  Reactor* r = model_->NextReactor();
  size_t index = static_cast<size_t>(model_->IndexOf(r));
  r->RunInLoop([this, r, index, fd, peer] {
    auto conn = std::make_shared<Connection>(r, fd, peer, codec_.get(), this, conn_options_);
    conn->set_context(reinterpret_cast<void*>(index));
    conns_[index].emplace(conn.get(), conn);
    conn->Start();
  });
}

void ServiceAdapter::OnClose(Connection* conn, const std::string& reason) {
  if (reason.starts_with("protocol error")) {
    stats_.protocol_errors.fetch_add(1, std::memory_order_relaxed);
  }
  TRPC_LOG_DEBUG("service {}: connection {} closed: {}", config_.name, conn->peer().ToString(),
                 reason);
  conn_count_.fetch_sub(1, std::memory_order_relaxed);
  size_t index = reinterpret_cast<size_t>(conn->context());
  conns_[index].erase(conn);  // the connection keeps itself alive until its event returns
}

void ServiceAdapter::OnFrame(Connection* conn, ChainBuffer&& frame) {
  int64_t recv_ns = conn->reactor()->LoopTimeNs();
  auto ctx = std::make_shared<ServerContext>(conn->shared_from_this(), codec_.get(), recv_ns);
  std::string err;
  if (!codec_->DecodeRequest(std::move(frame), &ctx->request(), &err)) {
    // A header that does not parse gets no reply: the stream can no longer be trusted.
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: bad request from {}: {}",
                      config_.name, conn->peer().ToString(), err);
    conn->Close("protocol error: " + err);
    return;
  }
  uint32_t timeout_ms = ctx->request().timeout_ms;
  if (config_.timeout > 0 && (timeout_ms == 0 || config_.timeout < timeout_ms)) {
    timeout_ms = config_.timeout;
  }
  if (timeout_ms > 0) ctx->SetDeadlineNs(recv_ns + timeout_ms * kNanosPerMilli);
  stats_.requests.fetch_add(1, std::memory_order_relaxed);
  if (model_->HandlesInline()) {
    HandleRequest(ctx);
  } else {
    model_->Dispatch(conn->reactor(), [this, ctx] { HandleRequest(ctx); });
  }
}

void ServiceAdapter::HandleRequest(const ServerContextPtr& ctx) {
  int64_t deadline = ctx->GetDeadlineNs();
  if (deadline > 0 && MonotonicNanos() >= deadline) {
    stats_.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerTimeoutErr, "deadline passed before the request was handled"),
                   nullptr);
    return;
  }
  RpcMethodHandler* method = service_->FindMethod(ctx->GetFuncName());
  if (method == nullptr) {
    stats_.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerNoFuncErr, "no such function: " + ctx->GetFuncName()), nullptr);
    return;
  }
  try {
    method->Handle(ctx);
  } catch (const std::exception& e) {
    stats_.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerSystemErr, std::string("handler threw: ") + e.what()), nullptr);
  } catch (...) {
    stats_.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerSystemErr, "handler threw a non-std exception"), nullptr);
  }
}

}  // namespace trpc::detail
