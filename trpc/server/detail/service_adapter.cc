#include "trpc/server/detail/service_adapter.h"

#include "trpc/base/logging.h"

namespace trpc::detail {

ServiceAdapter::ServiceAdapter(const ServiceConfig& config, ServicePtr service, ThreadModel* model,
                               std::shared_ptr<ServerCodec> codec, const ServerFilterChain* filters)
    : config_(config),
      service_(std::move(service)),
      model_(model),
      codec_(std::move(codec)),
      counters_(*service_, model->ReactorCount()),
      path_(config_, service_.get(), model, codec_.get(), filters, &counters_),
      streams_(config_, service_.get(), model, codec_.get(), &path_, &counters_),
      listener_(config_, model, codec_.get(), this, &counters_),
      stop_(config_.name, model, &listener_, &path_) {}

ServiceAdapter::~ServiceAdapter() { Stop(); }

bool ServiceAdapter::StopBy(int64_t deadline_ns) {
  if (!listener_.started() || stopped_) return true;
  listener_.StopAccepting(deadline_ns);
  stopped_ = true;
  return stop_.Run(deadline_ns);
}

void ServiceAdapter::OnFrame(Connection* conn, ChainBuffer&& frame) {
  if (codec_->IsStreamFrame(frame)) [[unlikely]] {
    streams_.OnFrame(conn, std::move(frame));
    return;
  }
  path_.OnFrame(conn, std::move(frame));
}

void ServiceAdapter::OnClose(Connection* conn, const std::string& reason) {
  if (conn->close_cause() == CloseCause::kProtocolError) counters_.CountProtocolError();
  TRPC_LOG_DEBUG("service {}: connection {} closed: {}", config_.name, conn->peer().ToString(),
                 reason);
  streams_.OnClose(conn);
  listener_.Forget(conn);
}

ServiceStats ServiceAdapter::stats() const {
  ServiceStats s = counters_.Sum();
  s.accept_backoffs = listener_.accept_backoffs();
  return s;
}

void ServiceAdapter::CollectMetrics(ServiceMetrics* out) const {
  ServiceStats s = stats();
  out->name = config_.name;
  out->protocol = config_.protocol;
  out->connections = connection_count();
  out->connections_accepted = s.connections_accepted;
  out->connections_refused = s.connections_refused;
  out->protocol_errors = s.protocol_errors;
  out->rejected_overload = s.rejected_overload;
  out->rejected_parked_limit = s.rejected_parked_limit;
  out->rejected_deadline_passed = s.rejected_deadline_passed;
  out->rejected_deadline_unmeetable = s.rejected_deadline_unmeetable;
  if (const ConcurrencyLimiter* limiter = path_.limiter()) {
    out->concurrency_limit = limiter->limit();
    out->concurrency_in_flight = limiter->in_flight();
  }
  out->accept_backoffs = s.accept_backoffs;
  counters_.CollectTraffic(out);
}

}  // namespace trpc::detail
