#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trpc/base/chain_buffer.h"
#include "trpc/base/detail/timer_queue.h"
#include "trpc/base/status.h"
#include "trpc/client/client_config.h"
#include "trpc/client/client_context.h"
#include "trpc/client/detail/backend.h"
#include "trpc/client/detail/client_counters.h"
#include "trpc/client/detail/latency_window.h"
#include "trpc/client/detail/outgoing_call.h"
#include "trpc/client/detail/retry_budget.h"
#include "trpc/codec/rpc_message.h"

namespace google::protobuf {
class MessageLite;
}

namespace trpc {
class Reactor;
}

namespace trpc::detail {

/// Methods named in a retry or hedging policy: wire names, bare method names, or "*".
class MethodSet {
 public:
  explicit MethodSet(const std::vector<std::string>& names);
  bool empty() const { return names_.empty(); }
  bool Match(std::string_view func) const;

 private:
  // Looked up by string_view: matching a call's method copies no string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  bool all_ = false;
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;
};

/// A call under a retry or hedging policy: its attempts, which all start and end on `reactor`'s
/// thread, so nothing here needs a lock.
struct AttemptGroup {
  ClientContextPtr ctx;
  google::protobuf::MessageLite* rsp = nullptr;
  std::function<void(const Status&)> done;
  RpcRequestHead head;     // each attempt's request but its id, authority and timeout
  ChainBuffer body;        // the message, serialized once, shared by every attempt
  ChainBuffer attachment;  // the request's attachment, shared by every attempt
  int64_t deadline_ns = 0;
  Reactor* reactor = nullptr;
  size_t reactor_index = 0;
  // The two policies count apart: hedging sends at most hedge_max attempts at once (spaced by
  // hedge_delay_ns, or at once after a retryable failure); retrying starts at most
  // retry_max - 1 attempts after failures, when nothing else is in flight.
  uint32_t hedge_max = 1;
  uint32_t retry_max = 1;
  int64_t hedge_delay_ns = 0;
  uint32_t started = 0;
  uint32_t retries = 0;
  uint32_t outstanding = 0;
  bool finished = false;
  TimerId timer = 0;  // the pending hedge or retry back-off
  // Held, not just compared: a freed backend's address may be reused by a new one.
  std::vector<BackendPtr> tried;
  // Attempts in flight, to cancel the losers.
  std::vector<std::weak_ptr<OutgoingCall>> live;
  Status last;  // the latest failure
  // The method's counters (null: not counted) and when the call began, for its end.
  ClientMethodCounters* method = nullptr;
  int64_t start_ns = 0;
  uint64_t cancel_sub = 0;  // subscription to ctx's cancel signal (0: none), ended by Finish
};

/// What Attempts needs from the proxy: the clock, timers on the group's reactor, and building,
/// sending and cancelling one attempt. Tests give a fake one.
class AttemptHost {
 public:
  virtual ~AttemptHost() = default;
  virtual int64_t Now() = 0;
  /// The protocol's own status of a call that ended with `st`, for the metrics (-1: none).
  virtual int WireStatus(const Status& st) {
    (void)st;
    return -1;
  }
  /// The proxy is stopping: no attempt may start.
  virtual bool Stopped() = 0;
  /// The client's overload throttle refuses an extra attempt now.
  virtual bool RefusesExtraAttempt(int64_t now) = 0;
  /// Builds the next attempt of `group`: chooses an endpoint, avoiding group.tried where it
  /// can, and encodes the request. Null with `*st` when nothing can go. The call's OnReply
  /// must end in Attempts::OnAttemptDone.
  virtual std::shared_ptr<OutgoingCall> PrepareAttempt(const std::shared_ptr<AttemptGroup>& group,
                                                       int64_t now, Status* st) = 0;
  virtual void SendAttempt(AttemptGroup& group, std::shared_ptr<OutgoingCall> call) = 0;
  /// Stops an attempt still in flight; its OnReply may run inside (with "cancelled").
  virtual void CancelAttempt(OutgoingCall& call) = 0;
  virtual TimerId AddTimer(AttemptGroup& group, int64_t at_ns, std::function<void()> fn) = 0;
  virtual void CancelTimer(AttemptGroup& group, TimerId id) = 0;
};

/// Retries, hedging and their budget for one client service (`retry` and `hedging` in its
/// config): decides when another attempt of a call goes, and ends the call with the first
/// success or the last failure.
///
/// Thread contract: PolicyFor, NewGroup and OnLatency from any thread (the budget and the
/// latency window are thread-safe); everything about one group on its reactor's thread; the
/// groups of reactor i are registered per reactor, touched only on that thread.
class Attempts {
 public:
  Attempts(const ClientServiceConfig& config, AttemptHost* host, size_t reactors);

  /// Whether `func` is under a policy (false fast when no policy is configured).
  bool Covers(std::string_view func) const {
    return (!retry_methods_.empty() && retry_methods_.Match(func)) ||
           (!hedge_methods_.empty() && hedge_methods_.Match(func));
  }
  /// A group for a call of `func` (Covers(func)), its limits set; the caller fills the rest.
  /// Counts the first attempt in the budget.
  std::shared_ptr<AttemptGroup> NewGroup(std::string_view func, int64_t now);
  /// On the group's reactor thread: registers the group and starts its first attempt.
  void Begin(const std::shared_ptr<AttemptGroup>& group);
  /// On the group's reactor thread: an attempt ended with `st` (the reply decoded).
  void OnAttemptDone(const std::shared_ptr<AttemptGroup>& group, OutgoingCall& call,
                     const Status& st);
  /// On the group's reactor thread: ends an unfinished group with `st` (its context's cancel
  /// signal fired), cancelling its attempts in flight.
  void Cancel(const std::shared_ptr<AttemptGroup>& group, const Status& st) { Finish(group, st); }
  /// On reactor `index`'s thread, once the host is stopped: ends the groups waiting there
  /// between attempts (a back-off, a hedge's delay): nothing else would end them.
  void StopOnLoop(size_t index);

  /// Hedging with delay 0 hedges at the observed P95 of successful attempts.
  bool tracks_latency() const { return track_latency_; }
  void OnLatency(int64_t now, int64_t latency_ns) { latency_.Add(now, latency_ns); }

 private:
  void StartAttempt(const std::shared_ptr<AttemptGroup>& group);
  void Finish(const std::shared_ptr<AttemptGroup>& group, const Status& st);
  bool Retryable(int ret) const;
  // Spends a retry or hedge from the budget; a refusal is counted in `g`'s method.
  bool SpendBudget(const AttemptGroup& g, int64_t now);

  const RetryConfig retry_;
  const HedgingConfig hedging_;
  AttemptHost* const host_;
  MethodSet retry_methods_;
  MethodSet hedge_methods_;
  RetryBudget budget_;
  LatencyWindow latency_;
  bool track_latency_ = false;
  // Groups not finished yet, per reactor, so that StopOnLoop finds those between attempts.
  std::vector<std::unordered_map<AttemptGroup*, std::shared_ptr<AttemptGroup>>> groups_;
};

}  // namespace trpc::detail
