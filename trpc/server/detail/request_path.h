#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "trpc/base/chain_buffer.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/runtime/detail/thread_model.h"
#include "trpc/server/detail/concurrency_limiter.h"
#include "trpc/server/detail/parked_work.h"
#include "trpc/server/detail/server_call.h"
#include "trpc/server/detail/service_counters.h"
#include "trpc/server/server_config.h"
#include "trpc/server/server_filter.h"
#include "trpc/server/service.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

/// One service's request path: decodes a frame into a call, admits it (the parked-work bound,
/// max_concurrency, the filters), hands it to the thread model, and runs its handler where the
/// model puts it (deadline checks, the method, a handler's exception turned into a reply).
/// Protocol-neutral: the codec and the service's Route() know the protocol.
///
/// Thread contract: OnFrame on the connection's loop thread; RunCall where the thread model
/// runs the call (many at once). Set-up (SetParkedBound) before the first frame.
class RequestPath final : public CallRunner {
 public:
  /// `filters` (may be empty, not null) must outlive every call: the server keeps chains for
  /// the life of the process. The others must outlive this.
  RequestPath(const ServiceConfig& config, Service* service, ThreadModel* model, ServerCodec* codec,
              const ServerFilterChain* filters, ServiceCounters* counters);

  /// Admits requests against the process's bound on parked work (detail::ParkedWork).
  void SetParkedBound(bool on) { parked_bound_ = on; }
  /// max_concurrency's limiter (null: no limit).
  const ConcurrencyLimiter* limiter() const { return limiter_.get(); }

  /// Admission of a call decoded on reactor `index` (loop thread): the parked-work bound,
  /// max_concurrency and the SERVER_POST_RECV_MSG filters, in that order. False with the
  /// refusal's status (counted as failed) when one of them refuses. The stream path admits a
  /// stream's call the same way, and it holds what it took for the stream's life.
  bool Admit(ServerCall* call, size_t index, int64_t recv_ns, ServiceCounters::Requests& counters,
             Status* refusal);
  /// A complete frame read from `conn`.
  void OnFrame(Connection* conn, ChainBuffer&& frame);
  void RunCall(const ServerContextPtr& ctx, ServerCall& call) override;

 private:
  // The index of a connection's reactor in the thread model.
  size_t ReactorIndex(const Connection* conn) const {
    return static_cast<size_t>(model_->IndexOf(conn->reactor()));
  }
  // `now_ns`: a recent clock reading to check the deadline against, or 0 to read the clock.
  void HandleRequest(const ServerContextPtr& ctx, ServerCall& call,
                     ServiceCounters::Requests& counters, int64_t now_ns);

  const ServiceConfig& config_;
  Service* service_;
  ThreadModel* model_;
  ServerCodec* codec_;
  const ServerFilterChain* filters_;
  ServiceCounters* counters_;
  std::unique_ptr<ConcurrencyLimiter> limiter_;  // max_concurrency (null: no limit)
  bool parked_bound_ = false;
};

// Inline: it runs for every request, and a call costs more than its usual work (two tests).
__attribute__((always_inline)) inline bool RequestPath::Admit(ServerCall* call, size_t index,
                                                              int64_t recv_ns,
                                                              ServiceCounters::Requests& counters,
                                                              Status* refusal) {
  if (parked_bound_) {
    // The process-wide bound comes first: past it, a parked handler more could exhaust the
    // process's memory mappings (fiber stacks) or memory, whatever service it belongs to.
    ParkedWork::Result r = ParkedWork::Instance().TryAcquire();
    if (r == ParkedWork::Result::kRefused) [[unlikely]] {
      counters.rejected_parked_limit.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      *refusal = Status(kServerOverloadErr, "server overloaded: max_parked_requests reached");
      return false;
    }
    if (r == ParkedWork::Result::kTaken) call->SetParkedPermit();
  }
  if (limiter_ != nullptr) {
    // Before the filters and the body's parse: refusing must cost far less than serving.
    if (!limiter_->TryAdmit(index, recv_ns)) {
      counters.rejected_overload.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      *refusal = Status(kServerOverloadErr, "server overloaded: max_concurrency reached");
      return false;
    }
    call->SetLimiter(limiter_.get(), index);
  }
  if (!filters_->Empty()) {
    call->SetFilterChain(filters_);
    if (!call->RunFilters(FilterPoint::SERVER_POST_RECV_MSG)) {
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      *refusal = call->GetStatus();
      return false;
    }
  }
  return true;
}

}  // namespace trpc::detail
