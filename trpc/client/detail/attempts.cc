#include "trpc/client/detail/attempts.h"

#include <algorithm>
#include <random>

namespace trpc::detail {

namespace {
// Hedging with delay 0 (the observed P95) waits this long until there are samples.
constexpr int64_t kDefaultHedgeDelayNs = 10 * kNanosPerMilli;
}  // namespace

MethodSet::MethodSet(const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    if (n == "*") all_ = true;
    names_.insert(n);
  }
}

bool MethodSet::Match(std::string_view func) const {
  if (all_) return true;
  if (names_.empty()) return false;
  if (names_.find(func) != names_.end()) return true;
  size_t slash = func.rfind('/');
  return slash != std::string_view::npos && names_.find(func.substr(slash + 1)) != names_.end();
}

Attempts::Attempts(const ClientServiceConfig& config, AttemptHost* host, size_t reactors)
    : retry_(config.retry),
      hedging_(config.hedging),
      host_(host),
      retry_methods_(config.retry.methods),
      hedge_methods_(config.hedging.methods),
      budget_(config.retry.budget_percent, config.retry.budget_min),
      track_latency_(!hedge_methods_.empty() && config.hedging.delay == 0),
      groups_(reactors) {}

std::shared_ptr<AttemptGroup> Attempts::NewGroup(std::string_view func, int64_t now) {
  const bool retry = !retry_methods_.empty() && retry_methods_.Match(func);
  const bool hedge = !hedge_methods_.empty() && hedge_methods_.Match(func);
  auto g = std::make_shared<AttemptGroup>();
  g->retry_max = retry ? retry_.max_attempts : 1;
  g->hedge_max = hedge ? hedging_.max_attempts : 1;
  g->hedge_delay_ns = !hedge               ? 0
                      : hedging_.delay > 0 ? int64_t{hedging_.delay} * kNanosPerMilli
                                           : latency_.Quantile(now, 0.95, kDefaultHedgeDelayNs);
  budget_.OnFirstAttempt();
  return g;
}

void Attempts::Begin(const std::shared_ptr<AttemptGroup>& group) {
  if (group->finished) return;  // cancelled before it began
  groups_[group->reactor_index].emplace(group.get(), group);
  StartAttempt(group);
}

bool Attempts::Retryable(int ret) const {
  if (ret == kClientConnectErr || ret == kClientNetworkErr || ret == kServerOverloadErr) {
    return true;
  }
  return std::find(retry_.codes.begin(), retry_.codes.end(), static_cast<uint32_t>(ret)) !=
         retry_.codes.end();
}

namespace {
// Counts into the group's method, when it is counted.
void Count(const AttemptGroup& g, std::atomic<uint64_t> ClientMethodShard::*counter) {
  if (g.method != nullptr) ClientMethodCounters::Add(g.method->Local().*counter);
}
}  // namespace

bool Attempts::SpendBudget(const AttemptGroup& g, int64_t now) {
  if (budget_.TrySpend(now)) return true;
  Count(g, &ClientMethodShard::budget_refusals);
  return false;
}

void Attempts::StartAttempt(const std::shared_ptr<AttemptGroup>& g) {
  if (g->finished) return;
  const int64_t now = host_->Now();
  Status st;
  std::shared_ptr<OutgoingCall> call;
  if (host_->Stopped()) {
    st = Status(kClientNetworkErr, "proxy stopped");
  } else if (g->deadline_ns > 0 && now >= g->deadline_ns) {
    st = Status(kClientInvokeTimeoutErr, "no time left for another attempt");
  } else if (g->started > 0 && host_->RefusesExtraAttempt(now)) {
    st = Status(kClientLimitedErr, "refused by the client's overload throttle");
    Count(*g, &ClientMethodShard::throttle_refusals);
  } else {
    call = host_->PrepareAttempt(g, now, &st);
  }
  if (call == nullptr) {
    // Nothing went out: the call ends now unless an earlier attempt is still on its way.
    if (g->outstanding == 0) Finish(g, g->last.OK() ? st : g->last);
    return;
  }
  if (g->started > 0) {
    // An extra attempt: a hedge under a hedging policy, else a retry.
    Count(*g, g->hedge_max > 1 ? &ClientMethodShard::hedges : &ClientMethodShard::retries);
  }
  ++g->started;
  ++g->outstanding;
  g->tried.push_back(call->backend);
  g->live.push_back(call);
  if (g->timer != 0) {
    host_->CancelTimer(*g, g->timer);
    g->timer = 0;
  }
  if (g->started < g->hedge_max) {
    // The next hedge, unless a reply comes first. It fires only while this attempt (or a later
    // one) is in flight: a call with nothing in flight has ended or is retrying.
    int64_t at = now + g->hedge_delay_ns;
    if (g->deadline_ns == 0 || at < g->deadline_ns) {
      g->timer = host_->AddTimer(*g, at, [this, g] {
        g->timer = 0;
        if (g->finished || g->outstanding == 0) return;
        if (SpendBudget(*g, host_->Now())) StartAttempt(g);
      });
    }
  }
  host_->SendAttempt(*g, std::move(call));
}

void Attempts::OnAttemptDone(const std::shared_ptr<AttemptGroup>& g, OutgoingCall& call,
                             const Status& st) {
  --g->outstanding;
  std::erase_if(g->live, [&call](const std::weak_ptr<OutgoingCall>& w) {
    auto p = w.lock();
    return p == nullptr || p.get() == &call;
  });
  if (g->finished) return;
  if (st.OK()) {
    g->ctx->SetBackend(call.backend->addr);  // the attempt that won
    Finish(g, st);
    return;
  }
  g->last = st;
  if (g->outstanding > 0) return;  // another attempt is on its way: it decides
  const int64_t now = host_->Now();
  const bool retryable = Retryable(st.GetFrameworkRetCode()) && !host_->Stopped();
  if (retryable && g->started < g->hedge_max) {
    // Hedging: a failure that may be repeated starts the next hedge at once.
    if (SpendBudget(*g, now)) {
      StartAttempt(g);
      return;
    }
  } else if (retryable && g->retries + 1 < g->retry_max && SpendBudget(*g, now)) {
    // Retrying: after a jittered exponential back-off, a uniform share of
    // base * 2^(retry), capped at backoff_max.
    const int64_t cap =
        std::min<int64_t>(int64_t{retry_.backoff_base} << std::min<uint32_t>(g->retries, 20),
                          retry_.backoff_max) *
        kNanosPerMilli;
    thread_local std::mt19937_64 rng(std::random_device{}());
    const int64_t wait =
        cap > 0 ? std::uniform_int_distribution<int64_t>(0, cap - 1)(rng) : int64_t{0};
    if (g->deadline_ns == 0 || now + wait < g->deadline_ns) {
      ++g->retries;
      if (g->timer != 0) host_->CancelTimer(*g, g->timer);
      g->timer = 0;
      if (wait == 0) {
        StartAttempt(g);
      } else {
        g->timer = host_->AddTimer(*g, now + wait, [this, g] {
          g->timer = 0;
          StartAttempt(g);
        });
      }
      return;
    }
  }
  Finish(g, st);
}

void Attempts::Finish(const std::shared_ptr<AttemptGroup>& g, const Status& st) {
  if (g->finished) return;
  g->finished = true;
  if (g->cancel_sub != 0) g->ctx->GetCancelSignal()->Unsubscribe(g->cancel_sub);
  groups_[g->reactor_index].erase(g.get());
  if (g->timer != 0) {
    host_->CancelTimer(*g, g->timer);
    g->timer = 0;
  }
  // The losers: their OnReply may run inside CancelAttempt (and finds the group finished).
  auto live = std::move(g->live);
  g->live.clear();
  for (auto& weak : live) {
    if (auto c = weak.lock()) host_->CancelAttempt(*c);
  }
  if (g->method != nullptr) {
    g->method->End(host_->Now() - g->start_ns, st.GetFrameworkRetCode(), st.GetFuncRetCode(),
                   host_->WireStatus(st));
  }
  g->ctx->SetStatus(st);
  auto done = std::move(g->done);
  done(st);
}

void Attempts::StopOnLoop(size_t index) {
  auto groups = std::move(groups_[index]);
  groups_[index].clear();
  for (auto& [raw, g] : groups) Finish(g, Status(kClientNetworkErr, "proxy stopped"));
}

}  // namespace trpc::detail
