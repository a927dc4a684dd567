#include "trpc/client/service_proxy.h"

#include <google/protobuf/message_lite.h>

#include <algorithm>
#include <atomic>
#include <latch>
#include <mutex>
#include <random>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "fmt/format.h"
#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/base/suggest.h"
#include "trpc/base/zero_copy_stream.h"
#include "trpc/client/detail/codec_options.h"
#include "trpc/client/detail/latency_window.h"
#include "trpc/client/detail/overload_throttle.h"
#include "trpc/client/detail/retry_budget.h"
#include "trpc/client/load_balancer.h"
#include "trpc/client/selector.h"
#include "trpc/codec/codec.h"
#include "trpc/codec/message_body.h"
#include "trpc/fiber/event.h"
#include "trpc/runtime/thread_model.h"
#include "trpc/transport/client_connection.h"
#include "trpc/transport/client_connection_pool.h"

namespace trpc {

namespace {
// A protocol that answers in order pools this many connections per backend per reactor unless
// max_conn_num says otherwise (tRPC-Cpp's default pool size).
constexpr uint32_t kDefaultPoolSize = 64;
// How long making a proxy may wait for its selector's first endpoint list.
constexpr uint32_t kFirstListWaitMs = 3000;
// Alternatives asked of the picker before falling back to an ejected or already tried endpoint.
constexpr uint32_t kMaxPickAlternatives = 16;
// Hedging with delay 0 (the observed P95) waits this long until there are samples.
constexpr int64_t kDefaultHedgeDelayNs = 10 * kNanosPerMilli;

// Methods named in a retry or hedging policy: wire names, bare method names, or "*".
class MethodSet {
 public:
  explicit MethodSet(const std::vector<std::string>& names) {
    for (const std::string& n : names) {
      if (n == "*") all_ = true;
      names_.insert(n);
    }
  }
  bool empty() const { return names_.empty(); }
  bool Match(const std::string& func) const {
    if (all_) return true;
    if (names_.empty()) return false;
    if (names_.find(std::string_view(func)) != names_.end()) return true;
    size_t slash = func.rfind('/');
    return slash != std::string::npos &&
           names_.find(std::string_view(func).substr(slash + 1)) != names_.end();
  }

 private:
  // Looked up by string_view: matching a call's method copies no string.
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view v) const { return std::hash<std::string_view>()(v); }
  };
  bool all_ = false;
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;
};

// Failures that say something about the endpoint itself (outlier ejection counts them): it
// could not be reached, dropped the connection, failed inside, or did not answer in time.
bool IsEndpointFailure(int ret) {
  return ret == kClientConnectErr || ret == kClientNetworkErr || ret == kServerSystemErr ||
         ret == kClientInvokeTimeoutErr;
}
}  // namespace

// Everything behind ServiceProxy's public surface.
class ServiceProxy::Impl {
 public:
  Impl(ClientServiceConfig config, ThreadModel* model);
  ~Impl() {
    Stop();
    if (buffer_budget_) buffer_budget_->DropSlots(this);
  }
  void SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
    buffer_budget_ = std::move(budget);
    budget_slots_.clear();
    for (size_t i = 0; buffer_budget_ && i < model_->ReactorCount(); ++i) {
      budget_slots_.push_back(buffer_budget_->NewSlot(model_->GetReactor(i), this));
    }
  }

  bool Init(std::string* err);
  void Stop();
  void AsyncUnaryInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req,
                        google::protobuf::MessageLite* rsp, Done done);
  Status OnewayInvoke(const ClientContextPtr& ctx, const google::protobuf::MessageLite& req);
  void AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done);

  const ClientServiceConfig& config() const { return config_; }
  ThreadModel* model() const { return model_; }

 private:
  struct Backend;
  struct BackendSet;
  struct Call;
  struct Op;

  // Computes the call's deadline and asks the overload throttle; false with `*st` when the
  // call must not go.
  bool Admit(const ClientContextPtr& ctx, int64_t now, int64_t* deadline, Status* st);
  // Fills `*r` (what the caller left empty) from the context; runs PRE_SEND_MSG filters.
  bool FillRequest(const ClientContextPtr& ctx, RpcRequest* r, uint32_t call_type, int64_t now,
                   int64_t deadline, Status* st);
  // Chooses the endpoint, gives the request its id and encodes it into `call`.
  bool Dispatch(const ClientContextPtr& ctx, RpcRequest* r,
                const google::protobuf::MessageLite* body_msg, Call* call, const Op* op,
                int64_t now, Status* st);
  std::shared_ptr<Backend> Choose(const BackendSet& set, const ClientContext& ctx, const Op* op,
                                  int64_t now);
  // The set a call made on this thread chooses from: the reactor's copy on one of the model's
  // reactor threads, else set_ (then `*hold` keeps it alive).
  const BackendSet* CurrentSet(std::shared_ptr<const BackendSet>* hold);
  void StartOnLoop(Reactor* reactor, std::shared_ptr<Call> call);
  // Decodes a reply (or takes a failure) into the call's Status and runs its callback.
  void Finish(Call* call, Status st, ChainBuffer&& frame);
  // The reply's status, with the body parsed into `call->rsp` when it succeeded.
  Status Decode(Call* call, Status st, ChainBuffer&& frame);
  // Live figures and outlier ejection, after an attempt ended with `st`.
  void NoteEndpoint(Call* call, const Status& st);
  void MaybeEject(Backend* b, int64_t now);
  // Tells the overload throttle (if any) how a call that it let through ended.
  void NoteForThrottle(const Status& st);

  // Calls with more than one possible attempt (retry / hedging policies).
  void StartAttempt(const std::shared_ptr<Op>& op);
  void OnAttemptDone(Call* call, const Status& st);
  void FinishOp(const std::shared_ptr<Op>& op, const Status& st);
  bool Retryable(int ret) const;

  // The selector's new list: a new set, keeping the backends (connections, figures) of the
  // endpoints that stay.
  void OnEndpoints(std::vector<Endpoint> list);

  ClientConnectionPool* GetPool(size_t reactor_index, Backend* b);
  ClientConnectionPtr GetConnection(size_t reactor_index, Backend* b, size_t slot, Status* st);
  ClientConnectionPtr Connect(size_t reactor_index, const NetAddress& addr, Status* st);
  Reactor* PickReactor();
  // Runs the filters at `point`; on a REJECT returns false with the reason in ctx's status.
  bool RunFilters(FilterPoint point, const ClientContextPtr& ctx);

  ClientServiceConfig config_;
  ThreadModel* model_;
  std::shared_ptr<ClientCodec> codec_;
  detail::ClientFilterChain filters_;
  std::unique_ptr<detail::OverloadThrottle> throttle_;  // overload_throttle: true
  std::shared_ptr<Selector> selector_;
  std::unique_ptr<SelectorSubscription> subscription_;
  PickerMaker make_picker_;
  // The endpoints calls choose from, replaced whole by OnEndpoints; readers take a reference
  // under set_read_mu_ (held for a reference count's increment, never while building a set).
  // A plain mutex rather than std::atomic<std::shared_ptr>: libstdc++ implements that with a
  // lock bit too, whose unlocked read ThreadSanitizer reports as a race.
  std::shared_ptr<const BackendSet> LoadSet() const {
    std::lock_guard lock(set_read_mu_);
    return set_;
  }
  void StoreSet(std::shared_ptr<const BackendSet> next) {
    {
      std::lock_guard lock(set_read_mu_);
      set_.swap(next);
    }
    // `next` (the old set) is released here, outside the lock.
  }
  mutable std::mutex set_read_mu_;
  std::shared_ptr<const BackendSet> set_;
  // Each reactor's copy of set_, read without atomics by calls made on that reactor's thread
  // (the common case: a handler's downstream call); updated by a task posted to the reactor
  // after each change, so it lags set_ by at most one loop iteration. Touched only on that
  // reactor's thread.
  struct alignas(64) ReactorSet {
    std::shared_ptr<const BackendSet> set;
  };
  std::vector<ReactorSet> reactor_sets_;
  std::mutex set_mu_;  // serializes OnEndpoints; guards all_backends_
  std::vector<std::weak_ptr<Backend>> all_backends_;  // every backend still alive, for Stop
  // Short connections per reactor, until they close: touched only on that reactor's thread.
  std::vector<std::unordered_map<ClientConnection*, ClientConnectionPtr>> short_conns_;
  // Calls under a policy not finished yet, per reactor (their attempts' reactor), so that Stop
  // can end those waiting on a timer: touched only on that reactor's thread.
  std::vector<std::unordered_map<Op*, std::shared_ptr<Op>>> ops_;
  std::mutex eject_mu_;  // one ejection decision at a time (the share check and the store)
  ConnectionOptions conn_options_;
  // client.max_buffered_bytes: the budget and a slot of it per reactor (null/empty: no bound).
  std::shared_ptr<BufferBudget> buffer_budget_;
  std::vector<BufferBudget::Slot*> budget_slots_;
  // conn_options_ with the budget slot of reactor `reactor_index`.
  ConnectionOptions OptionsFor(size_t reactor_index) const {
    ConnectionOptions o = conn_options_;
    if (!budget_slots_.empty()) o.budget = budget_slots_[reactor_index];
    return o;
  }
  std::atomic<uint32_t> next_request_id_{0};
  uint32_t conns_per_backend_ = 1;
  bool short_conn_ = false;
  bool fifo_ = false;  // the protocol answers in order: pools instead of multiplexed conns
  // Policies.
  MethodSet retry_methods_;
  MethodSet hedge_methods_;
  std::unique_ptr<detail::RetryBudget> budget_;  // with either policy
  detail::LatencyWindow latency_;                // hedging with delay 0 (observed P95)
  bool track_latency_ = false;
  bool initialized_ = false;
  std::atomic<bool> stopped_{false};
};

// One endpoint the proxy calls: its connections and live figures. Shared by the sets that list
// it and by the calls made to it; when the last of them lets go (the endpoint left and its
// calls ended), its connections are closed on their reactors.
struct ServiceProxy::Impl::Backend {
  Backend(const Endpoint& e, ThreadModel* m, uint32_t conns_per_reactor)
      : addr(e.addr), name(e.addr.ToString()), weight(e.weight), model(m) {
    conns.resize(m->ReactorCount());
    for (auto& per : conns) per.resize(conns_per_reactor);
    pools.resize(m->ReactorCount());
  }
  ~Backend() {
    for (size_t i = 0; i < conns.size(); ++i) {
      bool any = pools[i] != nullptr;
      for (const auto& c : conns[i]) any = any || c != nullptr;
      if (!any) continue;
      std::shared_ptr<ClientConnectionPool> pool(pools[i].release());
      // Both go with the task, so they are destroyed on their reactor.
      model->GetReactor(i)->Post([c = std::move(conns[i]), pool = std::move(pool)] {
        for (const auto& conn : c) {
          if (conn) conn->Close("endpoint removed");
        }
        if (pool) pool->Close("endpoint removed");
      });
    }
  }

  const NetAddress addr;
  const std::string name;  // "ip:port": the request's authority, the set's key
  uint32_t weight;         // under set_mu_
  ThreadModel* const model;
  EndpointStats stats;
  // Outlier ejection (relaxed atomics: steering figures, see MaybeEject).
  std::atomic<uint32_t> consecutive_failures{0};
  std::atomic<int64_t> ejected_until_ns{0};
  std::atomic<uint32_t> ejections{0};  // in a row: the next ejection lasts 2^ejections longer
  std::atomic<uint32_t> next_slot{0};
  // conns[reactor][k], pools[reactor]: touched only on that reactor's thread.
  std::vector<std::vector<ClientConnectionPtr>> conns;
  std::vector<std::unique_ptr<ClientConnectionPool>> pools;
};

// An endpoint list and the picker over it. Immutable once published.
struct ServiceProxy::Impl::BackendSet {
  std::vector<std::shared_ptr<Backend>> backends;
  std::unique_ptr<Picker> picker;  // null when the list is empty
  bool track_stats = false;        // the picker reads EndpointStats
};

// One attempt on its way: the encoded request and what to do with the reply.
struct ServiceProxy::Impl::Call {
  ChainBuffer request;
  uint32_t request_id = 0;
  uint32_t call_type = kUnaryCall;
  int64_t deadline_ns = 0;
  int64_t start_ns = 0;
  std::shared_ptr<Backend> backend;
  bool tracked = false;  // counted in the backend's EndpointStats (OnStart done)
  size_t slot = 0;       // which of the backend's connections
  ClientContextPtr ctx;
  google::protobuf::MessageLite* rsp = nullptr;
  Done done;
  FrameDone frame_done;    // AsyncInvokeFrame: the frame goes back undecoded
  std::shared_ptr<Op> op;  // a call under a retry or hedging policy; then `done` is the op's
};

// A call under a retry or hedging policy: its attempts, which all start and end on `reactor`,
// so nothing here needs a lock.
struct ServiceProxy::Impl::Op {
  ClientContextPtr ctx;
  google::protobuf::MessageLite* rsp = nullptr;
  Done done;
  RpcRequest tmpl;   // everything but the body, the request id and the authority
  ChainBuffer body;  // the message, serialized once
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
  std::vector<std::shared_ptr<Backend>> tried;
  // Attempts in flight on multiplexed connections, to cancel the losers.
  std::vector<std::pair<std::weak_ptr<ClientConnection>, uint32_t>> live;
  Status last;  // the latest failure

  bool Tried(const Backend* b) const {
    return std::any_of(tried.begin(), tried.end(), [b](const auto& t) { return t.get() == b; });
  }
};

ServiceProxy::Impl::Impl(ClientServiceConfig config, ThreadModel* model)
    : config_(std::move(config)),
      model_(model),
      reactor_sets_(model->ReactorCount()),
      short_conns_(model->ReactorCount()),
      ops_(model->ReactorCount()),
      retry_methods_(config_.retry.methods),
      hedge_methods_(config_.hedging.methods) {}

bool ServiceProxy::Impl::Init(std::string* err) {
  std::string where = config_.origin.empty() ? "" : config_.origin + ": ";
  codec_ = CodecRegistry::Instance().GetClient(config_.protocol);
  if (!codec_) {
    *err = where + "client " + config_.name + ": unknown protocol '" + config_.protocol + "'";
    return false;
  }
  if (!config_.protocol_options.empty()) {
    codec_ = ClientCodecWithOptions(codec_, config_, err);
    if (!codec_) return false;
  }
  std::string missing;
  if (!filters_.Build(config_.filter, &missing)) {
    *err = where + "client " + config_.name + ": no client filter named '" + missing +
           "' is registered" + filters_.UnknownNameHint(missing);
    return false;
  }
  make_picker_ = LoadBalancerFactory::Find(config_.load_balance_name);
  if (!make_picker_) {
    *err = where + "client " + config_.name + ": no load balancer named '" +
           config_.load_balance_name + "' is registered" +
           RegisteredNamesHint(config_.load_balance_name, LoadBalancerFactory::Names());
    return false;
  }
  std::string why;
  selector_ = SelectorFactory::Get(config_.selector_name, &why);
  if (!selector_) {
    // A plug-in's own settings errors carry their own "file:line".
    *err = why.find(": ") != std::string::npos && why.rfind("no selector", 0) != 0
               ? why
               : where + "client " + config_.name + ": " + why;
    return false;
  }
  fifo_ = codec_->FifoResponses();
  conns_per_backend_ = config_.max_conn_num > 0 ? config_.max_conn_num
                       : fifo_                  ? kDefaultPoolSize
                                                : 1;
  short_conn_ = config_.conn_type == "short";
  conn_options_.idle_timeout_ms = 0;  // a client's connection stays until the server closes it
  conn_options_.max_packet_size = config_.max_packet_size;
  if (config_.overload_throttle) throttle_ = std::make_unique<detail::OverloadThrottle>();
  if (!retry_methods_.empty() || !hedge_methods_.empty()) {
    budget_ = std::make_unique<detail::RetryBudget>(config_.retry.budget_percent,
                                                    config_.retry.budget_min);
  }
  track_latency_ = !hedge_methods_.empty() && config_.hedging.delay == 0;
  StoreSet(std::make_shared<const BackendSet>());
  SelectorTarget target{config_.target, config_.name_space, config_.name, config_.origin};
  subscription_ = selector_->Subscribe(
      target, kFirstListWaitMs,
      [this](std::vector<Endpoint> list) { OnEndpoints(std::move(list)); }, err);
  if (!subscription_) return false;
  initialized_ = true;
  return true;
}

void ServiceProxy::Impl::OnEndpoints(std::vector<Endpoint> list) {
  std::lock_guard lock(set_mu_);
  std::shared_ptr<const BackendSet> old = LoadSet();
  std::unordered_map<std::string, std::shared_ptr<Backend>> by_name;
  for (const auto& b : old->backends) by_name.emplace(b->name, b);
  auto next = std::make_shared<BackendSet>();
  std::unordered_set<std::string> seen;
  size_t added = 0;
  for (const Endpoint& e : list) {
    std::string name = e.addr.ToString();
    if (!seen.insert(name).second) continue;  // listed twice
    auto it = by_name.find(name);
    if (it != by_name.end()) {
      it->second->weight = std::max<uint32_t>(1, e.weight);
      next->backends.push_back(it->second);
      continue;
    }
    auto b = std::make_shared<Backend>(e, model_, fifo_ ? 0 : conns_per_backend_);
    b->weight = std::max<uint32_t>(1, e.weight);
    all_backends_.push_back(b);
    next->backends.push_back(std::move(b));
    ++added;
  }
  if (!next->backends.empty()) {
    std::vector<BalancerEndpoint> eps;
    eps.reserve(next->backends.size());
    for (const auto& b : next->backends) eps.push_back({b->addr, b->name, b->weight, &b->stats});
    next->picker = make_picker_(eps);
    next->track_stats = next->picker->UsesEndpointStats();
  }
  size_t removed = old->backends.size() + added - next->backends.size();
  TRPC_LOG_INFO("client {}: {} endpoint(s) ({} new, {} gone)", config_.name, next->backends.size(),
                added, removed);
  std::shared_ptr<const BackendSet> published = next;
  StoreSet(std::move(next));
  for (size_t i = 0; i < reactor_sets_.size(); ++i) {
    // Stop() clears the copies with tasks posted after these, once no update can come.
    model_->GetReactor(i)->RunInLoop([this, i, published] {
      if (!stopped_.load(std::memory_order_acquire)) reactor_sets_[i].set = published;
    });
  }
  std::erase_if(all_backends_, [](const std::weak_ptr<Backend>& w) { return w.expired(); });
}

void ServiceProxy::Impl::Stop() {
  // A proxy that never initialized has no connections (and may outlive its thread model).
  if (!initialized_ || stopped_.exchange(true)) return;
  subscription_.reset();  // no list comes after this
  std::vector<std::shared_ptr<Backend>> alive;
  {
    std::lock_guard lock(set_mu_);
    for (const auto& w : all_backends_) {
      if (auto b = w.lock()) alive.push_back(std::move(b));
    }
  }
  std::latch done(static_cast<std::ptrdiff_t>(short_conns_.size()));
  for (size_t i = 0; i < short_conns_.size(); ++i) {
    model_->GetReactor(i)->RunInLoop([this, i, &alive, &done] {
      // Closing fails the calls still pending with 141; their callbacks run here, while the
      // proxy is alive.
      for (const auto& b : alive) {
        for (auto& c : b->conns[i]) {
          if (c) c->Close("proxy stopped");
          c.reset();
        }
        if (b->pools[i]) b->pools[i]->Close("proxy stopped");
        b->pools[i].reset();
      }
      reactor_sets_[i].set.reset();
      auto shorts = std::move(short_conns_[i]);
      short_conns_[i].clear();
      for (auto& [raw, c] : shorts) c->Close("proxy stopped");
      // Calls between attempts (a retry's back-off, a hedge's delay) have no connection to
      // fail them: end them here, cancelling their timers, while the proxy is alive.
      auto ops = std::move(ops_[i]);
      ops_[i].clear();
      for (auto& [raw, op] : ops) FinishOp(op, Status(kClientNetworkErr, "proxy stopped"));
      done.count_down();
    });
  }
  done.wait();
  StoreSet(std::make_shared<const BackendSet>());
}

bool ServiceProxy::Impl::RunFilters(FilterPoint point, const ClientContextPtr& ctx) {
  std::string rejected_by;
  if (filters_.Run(point, ctx, &rejected_by)) return true;
  if (ctx->GetStatus().OK()) {
    ctx->SetStatus(Status(kUnknownErr, "rejected by client filter " + rejected_by));
  }
  return false;
}

Reactor* ServiceProxy::Impl::PickReactor() {
  Reactor* current = Reactor::Current();
  if (current != nullptr && model_->IndexOf(current) >= 0) return current;
  return model_->NextReactor();
}

bool ServiceProxy::Impl::Admit(const ClientContextPtr& ctx, int64_t now, int64_t* deadline_out,
                               Status* st) {
  uint32_t timeout_ms = ctx->GetTimeout() > 0 ? ctx->GetTimeout() : config_.timeout;
  int64_t deadline = timeout_ms > 0 ? now + timeout_ms * kNanosPerMilli : 0;
  if (ctx->GetDeadlineNs() > 0 && (deadline == 0 || ctx->GetDeadlineNs() < deadline)) {
    deadline = ctx->GetDeadlineNs();
  }
  if (deadline > 0 && deadline <= now) {
    *st = Status(kClientFullLinkTimeoutErr, "no time left for the call");
    return false;
  }
  if (throttle_ != nullptr && throttle_->ShouldRefuse(now)) {
    *st = Status(kClientLimitedErr, "refused by the client's overload throttle: " + config_.name +
                                        " has been answering 'overloaded'");
    return false;
  }
  *deadline_out = deadline;
  return true;
}

bool ServiceProxy::Impl::FillRequest(const ClientContextPtr& ctx, RpcRequest* req_in,
                                     uint32_t call_type, int64_t now, int64_t deadline,
                                     Status* st) {
  RpcRequest& r = *req_in;
  r.call_type = call_type;
  r.timeout_ms = deadline > 0
                     ? static_cast<uint32_t>((deadline - now + kNanosPerMilli - 1) / kNanosPerMilli)
                     : 0;
  r.caller = ctx->GetCaller();
  r.callee = config_.name;
  if (r.func.empty()) r.func = ctx->GetFuncName();
  if (!filters_.Empty() && !RunFilters(FilterPoint::CLIENT_PRE_SEND_MSG, ctx)) {
    *st = ctx->GetStatus();
    return false;
  }
  r.trans_info = ctx->GetReqTransInfo();
  r.compress_type = ctx->GetReqCompressType();
  return true;
}

std::shared_ptr<ServiceProxy::Impl::Backend> ServiceProxy::Impl::Choose(const BackendSet& set,
                                                                        const ClientContext& ctx,
                                                                        const Op* op, int64_t now) {
  PickInput in;
  in.hash_key = ctx.GetHashKey();
  in.has_hash_key = ctx.HasHashKey();
  const size_t n = set.backends.size();
  const uint32_t limit = static_cast<uint32_t>(std::min<size_t>(n + 1, kMaxPickAlternatives));
  size_t first = n;
  size_t untried = n;  // the first choice not tried yet, ejected or not
  for (in.attempt = 0; in.attempt < limit; ++in.attempt) {
    size_t i = set.picker->Pick(in);
    const Backend* b = set.backends[i].get();
    if (first == n) first = in.first_index = i;
    if (op != nullptr && op->Tried(b)) continue;
    if (untried == n) untried = i;
    if (b->ejected_until_ns.load(std::memory_order_relaxed) > now) continue;
    return set.backends[i];
  }
  // The picker's alternatives are all ejected or tried (p2c may offer the same pair each
  // time): look at every endpoint once, for one that is neither. Rare, so linear.
  if (op != nullptr || untried != n) {
    for (size_t i = 0; i < n; ++i) {
      const Backend* b = set.backends[i].get();
      if ((op == nullptr || !op->Tried(b)) &&
          b->ejected_until_ns.load(std::memory_order_relaxed) <= now) {
        return set.backends[i];
      }
    }
    if (op != nullptr && untried == n) {
      for (size_t i = 0; i < n; ++i) {
        if (!op->Tried(set.backends[i].get())) {
          untried = i;
          break;
        }
      }
    }
  }
  // Every endpoint is ejected or tried: an ejected endpoint beats failing the call.
  return set.backends[untried != n ? untried : first];
}

const ServiceProxy::Impl::BackendSet* ServiceProxy::Impl::CurrentSet(
    std::shared_ptr<const BackendSet>* hold) {
  if (Reactor* r = Reactor::Current(); r != nullptr) {
    int i = model_->IndexOf(r);
    if (i >= 0) {
      if (const BackendSet* s = reactor_sets_[static_cast<size_t>(i)].set.get()) return s;
    }
  }
  *hold = LoadSet();
  return hold->get();
}

bool ServiceProxy::Impl::Dispatch(const ClientContextPtr& ctx, RpcRequest* r,
                                  const google::protobuf::MessageLite* body_msg, Call* call,
                                  const Op* op, int64_t now, Status* st) {
  std::shared_ptr<const BackendSet> hold;
  const BackendSet* set = CurrentSet(&hold);
  if (set->backends.empty()) {
    *st =
        Status(kClientRouterErr, "no endpoint for client " + config_.name + " (selector " +
                                     config_.selector_name + ", target '" + config_.target + "')");
    return false;
  }
  call->backend = Choose(*set, *ctx, op, now);
  Backend* b = call->backend.get();
  if (conns_per_backend_ > 1 && !fifo_) {
    call->slot = b->next_slot.fetch_add(1, std::memory_order_relaxed) % conns_per_backend_;
  }
  r->request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (r->request_id == 0) {
    r->request_id = next_request_id_.fetch_add(1, std::memory_order_relaxed) + 1;
  }
  r->authority = b->name;
  if (!codec_->EncodeRequest(r, body_msg, &call->request)) {
    *st = Status(kClientEncodeErr, "cannot encode the request");
    return false;
  }
  call->request_id = r->request_id;
  call->call_type = r->call_type;
  call->start_ns = now;
  call->ctx = ctx;
  ctx->SetBackend(b->addr);
  // A one-way call never finishes: only calls that end count as in flight.
  if (set->track_stats && r->call_type != kOnewayCall) {
    b->stats.OnStart();
    call->tracked = true;
  }
  return true;
}

ClientConnectionPtr ServiceProxy::Impl::GetConnection(size_t reactor_index, Backend* b, size_t slot,
                                                      Status* st) {
  if (!short_conn_) {
    ClientConnectionPtr& c = b->conns[reactor_index][slot];
    if (c && c->usable()) return c;
    c = Connect(reactor_index, b->addr, st);
    return c;
  }
  // conn_type "short": a connection per call, owned by short_conns_ until it closes.
  ClientConnectionPtr c = Connect(reactor_index, b->addr, st);
  if (c) {
    auto& table = short_conns_[reactor_index];
    table.emplace(c.get(), c);
    c->set_close_callback([&table](ClientConnection* closed) { table.erase(closed); });
  }
  return c;
}

ClientConnectionPtr ServiceProxy::Impl::Connect(size_t reactor_index, const NetAddress& addr,
                                                Status* st) {
  auto c = std::make_shared<ClientConnection>(model_->GetReactor(reactor_index), addr, codec_.get(),
                                              OptionsFor(reactor_index), config_.connect_timeout);
  std::string err;
  if (!c->Connect(&err)) {
    *st = Status(kClientConnectErr, err);
    return nullptr;
  }
  return c;
}

ClientConnectionPool* ServiceProxy::Impl::GetPool(size_t reactor_index, Backend* b) {
  std::unique_ptr<ClientConnectionPool>& pool = b->pools[reactor_index];
  if (!pool) {
    ClientConnectionPool::Options o;
    o.max_connections = conns_per_backend_;
    o.max_outstanding = std::max<uint32_t>(1, config_.pipeline_depth);
    o.connect_timeout_ms = config_.connect_timeout;
    o.connection = OptionsFor(reactor_index);
    pool = std::make_unique<ClientConnectionPool>(model_->GetReactor(reactor_index), b->addr,
                                                  codec_.get(), o);
  }
  return pool.get();
}

void ServiceProxy::Impl::StartOnLoop(Reactor* reactor, std::shared_ptr<Call> call) {
  auto run = [this, reactor, call]() mutable {
    size_t index = static_cast<size_t>(model_->IndexOf(reactor));
    Call* c = call.get();
    const bool has_reply = c->done || c->frame_done || c->op;
    if (stopped_.load(std::memory_order_acquire)) {
      if (has_reply) Finish(c, Status(kClientNetworkErr, "proxy stopped"), ChainBuffer());
      return;
    }
    if (fifo_ && !short_conn_) {
      ClientConnectionPool* pool = GetPool(index, c->backend.get());
      if (c->call_type == kOnewayCall) {
        pool->SendOneway(std::move(c->request));
        return;
      }
      pool->Call(c->request_id, std::move(c->request), c->deadline_ns,
                 [this, call = std::move(call)](Status st, ChainBuffer&& frame) {
                   Finish(call.get(), std::move(st), std::move(frame));
                 });
      return;
    }
    Status st;
    ClientConnectionPtr conn = GetConnection(index, c->backend.get(), c->slot, &st);
    if (conn == nullptr) {
      if (has_reply) Finish(c, std::move(st), ChainBuffer());
      return;
    }
    if (c->call_type == kOnewayCall) {
      conn->SendOneway(std::move(c->request));
      if (short_conn_) conn->CloseAfterFlush();
      return;
    }
    if (c->op) c->op->live.emplace_back(conn, c->request_id);
    // A short connection closes when its call completes (short_conns_ owns it until then).
    ClientConnection* close_when_done = short_conn_ ? conn.get() : nullptr;
    conn->Call(c->request_id, std::move(c->request), c->deadline_ns,
               [this, call = std::move(call), close_when_done](Status st, ChainBuffer&& frame) {
                 Finish(call.get(), std::move(st), std::move(frame));
                 if (close_when_done) close_when_done->Close("short connection done");
               });
  };
  if (reactor->InLoopThread()) {
    run();
  } else {
    reactor->Post(std::move(run));
  }
}

Status ServiceProxy::Impl::Decode(Call* call, Status st, ChainBuffer&& frame) {
  if (!st.OK()) return st;
  RpcResponse rsp;
  std::string err;
  if (!codec_->DecodeResponse(std::move(frame), &rsp, &err)) {
    st = Status(kClientDecodeErr, "bad response: " + err);
  } else if (rsp.ret != 0 || rsp.func_ret != 0) {
    st = Status(rsp.ret, rsp.func_ret, std::move(rsp.error_msg));
  } else {
    bool ok;
    if (rsp.content_type == kContentTypeJson) {
      ok = ParseMessageBody(rsp.body, kContentTypeJson, call->rsp, &err);
    } else if (rsp.body.SpanCount() <= 1) {
      std::string_view s = rsp.body.FirstSpan();
      ok = call->rsp->ParseFromArray(s.data(), static_cast<int>(s.size()));
    } else {
      ChainBufferInputStream in(&rsp.body);
      ok = call->rsp->ParseFromZeroCopyStream(&in);
    }
    if (!ok) st = Status(kClientDecodeErr, "cannot parse the response body");
  }
  call->ctx->MutableRspTransInfo() = std::move(rsp.trans_info);
  if (!filters_.Empty()) {
    call->ctx->SetStatus(st);
    if (!RunFilters(FilterPoint::CLIENT_POST_RECV_MSG, call->ctx)) st = call->ctx->GetStatus();
  }
  return st;
}

void ServiceProxy::Impl::Finish(Call* call, Status st, ChainBuffer&& frame) {
  if (call->frame_done) {
    // Handed back undecoded: the throttle sees the transport's status only.
    NoteEndpoint(call, st);
    NoteForThrottle(st);
    call->ctx->SetStatus(st);
    call->frame_done(st, std::move(frame));
    return;
  }
  if (call->op) {
    // A hedge that lost: its reply is not decoded (the winner's is in the response already).
    if (!call->op->finished) st = Decode(call, std::move(st), std::move(frame));
    NoteEndpoint(call, st);
    NoteForThrottle(st);
    OnAttemptDone(call, st);
    return;
  }
  st = Decode(call, std::move(st), std::move(frame));
  NoteEndpoint(call, st);
  NoteForThrottle(st);
  call->ctx->SetStatus(st);
  call->done(st);
}

void ServiceProxy::Impl::NoteEndpoint(Call* call, const Status& st) {
  Backend* b = call->backend.get();
  if (b == nullptr) return;
  const int ret = st.GetFrameworkRetCode();
  // The clock is read only when something needs it: most calls only reset nothing.
  int64_t now = 0;
  if (call->tracked || track_latency_) {
    now = MonotonicNanos();
    if (call->tracked) b->stats.OnEnd(now - call->start_ns);
  }
  if (ret == kClientCanceledErr) return;  // a hedge we gave up on says nothing of the endpoint
  if (track_latency_ && st.OK()) latency_.Add(now, now - call->start_ns);
  const uint32_t threshold = config_.outlier_ejection.consecutive_failures;
  if (threshold == 0) return;
  if (IsEndpointFailure(ret)) {
    if (now == 0) now = MonotonicNanos();
    if (b->consecutive_failures.fetch_add(1, std::memory_order_relaxed) + 1 >= threshold) {
      MaybeEject(b, now);
    }
    return;
  }
  // Healthy: only write when there is something to reset (no shared-line writes per call).
  if (b->consecutive_failures.load(std::memory_order_relaxed) != 0) {
    b->consecutive_failures.store(0, std::memory_order_relaxed);
  }
  if (b->ejections.load(std::memory_order_relaxed) != 0 &&
      b->ejected_until_ns.load(std::memory_order_relaxed) <= MonotonicNanos()) {
    b->ejections.store(0, std::memory_order_relaxed);
  }
}

void ServiceProxy::Impl::MaybeEject(Backend* b, int64_t now) {
  if (b->ejected_until_ns.load(std::memory_order_relaxed) > now) return;  // out already
  // The share check and the ejection together, or reactors failing at once all eject.
  std::lock_guard lock(eject_mu_);
  if (b->ejected_until_ns.load(std::memory_order_relaxed) > now) return;
  std::shared_ptr<const BackendSet> set = LoadSet();
  const size_t n = set->backends.size();
  size_t out = 0;
  for (const auto& other : set->backends) {
    if (other->ejected_until_ns.load(std::memory_order_relaxed) > now) ++out;
  }
  const size_t allowed =
      std::max<size_t>(1, n * config_.outlier_ejection.max_ejection_percent / 100);
  if (n <= 1 || out >= allowed) return;
  const OutlierEjectionConfig& o = config_.outlier_ejection;
  uint32_t k = std::min<uint32_t>(b->ejections.fetch_add(1, std::memory_order_relaxed), 20);
  int64_t ms = std::min<int64_t>(int64_t{o.base_ejection_time} << k, o.max_ejection_time);
  b->ejected_until_ns.store(now + ms * kNanosPerMilli, std::memory_order_relaxed);
  b->consecutive_failures.store(0, std::memory_order_relaxed);
  TRPC_LOG_WARN("client {}: endpoint {} ejected for {} ms after {} failures in a row", config_.name,
                b->name, ms, o.consecutive_failures);
}

void ServiceProxy::Impl::NoteForThrottle(const Status& st) {
  if (throttle_ == nullptr) return;
  // The callee accepted the call unless it answered "overloaded" or the call timed out (an
  // overloaded callee that sheds nothing shows up as timeouts).
  int ret = st.GetFrameworkRetCode();
  if (ret == kClientCanceledErr) return;
  throttle_->OnResult(MonotonicNanos(), ret != kServerOverloadErr &&
                                            ret != kClientInvokeTimeoutErr &&
                                            ret != kClientFullLinkTimeoutErr);
}

bool ServiceProxy::Impl::Retryable(int ret) const {
  if (ret == kClientConnectErr || ret == kClientNetworkErr || ret == kServerOverloadErr) {
    return true;
  }
  const auto& codes = config_.retry.codes;
  return std::find(codes.begin(), codes.end(), static_cast<uint32_t>(ret)) != codes.end();
}

void ServiceProxy::Impl::StartAttempt(const std::shared_ptr<Op>& op) {
  if (op->finished) return;
  const int64_t now = MonotonicNanos();
  Status st;
  if (stopped_.load(std::memory_order_acquire)) {
    st = Status(kClientNetworkErr, "proxy stopped");
  } else if (op->deadline_ns > 0 && now >= op->deadline_ns) {
    st = Status(kClientInvokeTimeoutErr, "no time left for another attempt");
  } else if (op->started > 0 && throttle_ != nullptr && throttle_->ShouldRefuse(now)) {
    st = Status(kClientLimitedErr, "refused by the client's overload throttle");
  }
  auto call = std::make_shared<Call>();
  if (st.OK()) {
    RpcRequest a;
    const RpcRequest& t = op->tmpl;
    a.version = t.version;
    a.call_type = t.call_type;
    a.timeout_ms =
        op->deadline_ns > 0
            ? static_cast<uint32_t>((op->deadline_ns - now + kNanosPerMilli - 1) / kNanosPerMilli)
            : 0;
    a.content_type = t.content_type;
    a.caller = t.caller;
    a.callee = t.callee;
    a.func = t.func;
    a.trans_info = t.trans_info;
    a.compress_type = t.compress_type;
    a.body.AppendShared(op->body);
    Dispatch(op->ctx, &a, nullptr, call.get(), op.get(), now, &st);
  }
  if (!st.OK()) {
    // Nothing went out: the call ends now unless an earlier attempt is still on its way.
    if (op->outstanding == 0) FinishOp(op, op->last.OK() ? st : op->last);
    return;
  }
  call->deadline_ns = op->deadline_ns > 0 ? op->deadline_ns : now + 3600 * kNanosPerSecond;
  call->rsp = op->rsp;
  call->op = op;
  ++op->started;
  ++op->outstanding;
  op->tried.push_back(call->backend);
  if (op->timer != 0) {
    op->reactor->CancelTimer(op->timer);
    op->timer = 0;
  }
  if (op->started < op->hedge_max) {
    // The next hedge, unless a reply comes first. It fires only while this attempt (or a later
    // one) is in flight: a call with nothing in flight has ended or is retrying.
    int64_t at = now + op->hedge_delay_ns;
    if (op->deadline_ns == 0 || at < op->deadline_ns) {
      op->timer = op->reactor->AddTimer(at, [this, op] {
        op->timer = 0;
        if (op->finished || op->outstanding == 0) return;
        if (budget_->TrySpend(MonotonicNanos())) StartAttempt(op);
      });
    }
  }
  StartOnLoop(op->reactor, std::move(call));
}

void ServiceProxy::Impl::OnAttemptDone(Call* call, const Status& st) {
  std::shared_ptr<Op> op = call->op;
  --op->outstanding;
  std::erase_if(op->live, [call](const auto& l) { return l.second == call->request_id; });
  if (op->finished) return;
  if (st.OK()) {
    op->ctx->SetBackend(call->backend->addr);  // the attempt that won
    FinishOp(op, st);
    return;
  }
  op->last = st;
  if (op->outstanding > 0) return;  // another attempt is on its way: it decides
  const int64_t now = MonotonicNanos();
  const bool retryable =
      Retryable(st.GetFrameworkRetCode()) && !stopped_.load(std::memory_order_acquire);
  if (retryable && op->started < op->hedge_max) {
    // Hedging: a failure that may be repeated starts the next hedge at once.
    if (budget_->TrySpend(now)) {
      StartAttempt(op);
      return;
    }
  } else if (retryable && op->retries + 1 < op->retry_max && budget_->TrySpend(now)) {
    // Retrying: after a jittered exponential back-off, a uniform share of
    // base * 2^(retry), capped at backoff_max.
    const RetryConfig& r = config_.retry;
    const int64_t cap =
        std::min<int64_t>(int64_t{r.backoff_base} << std::min<uint32_t>(op->retries, 20),
                          r.backoff_max) *
        kNanosPerMilli;
    thread_local std::mt19937_64 rng(std::random_device{}());
    const int64_t wait =
        cap > 0 ? std::uniform_int_distribution<int64_t>(0, cap - 1)(rng) : int64_t{0};
    if (op->deadline_ns == 0 || now + wait < op->deadline_ns) {
      ++op->retries;
      if (op->timer != 0) op->reactor->CancelTimer(op->timer);
      op->timer = 0;
      if (wait == 0) {
        StartAttempt(op);
      } else {
        op->timer = op->reactor->AddTimer(now + wait, [this, op] {
          op->timer = 0;
          StartAttempt(op);
        });
      }
      return;
    }
  }
  FinishOp(op, st);
}

void ServiceProxy::Impl::FinishOp(const std::shared_ptr<Op>& op, const Status& st) {
  if (op->finished) return;
  op->finished = true;
  ops_[op->reactor_index].erase(op.get());
  if (op->timer != 0) {
    op->reactor->CancelTimer(op->timer);
    op->timer = 0;
  }
  // The losers: their callbacks run inside Cancel (and find the op finished).
  auto live = std::move(op->live);
  op->live.clear();
  for (auto& [weak, id] : live) {
    if (auto c = weak.lock()) c->Cancel(id);
  }
  op->ctx->SetStatus(st);
  Done done = std::move(op->done);
  done(st);
}

void ServiceProxy::Impl::AsyncUnaryInvoke(const ClientContextPtr& ctx,
                                          const google::protobuf::MessageLite& req,
                                          google::protobuf::MessageLite* rsp, Done done) {
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) {
      done(ctx->GetStatus());
      return;
    }
    // Every call that got past PRE_RPC_INVOKE meets POST_RPC_INVOKE, with its final status.
    done = [this, ctx, done = std::move(done)](const Status& st) {
      ctx->SetStatus(st);
      RunFilters(FilterPoint::CLIENT_POST_RPC_INVOKE, ctx);
      done(ctx->GetStatus());
    };
  }
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  Status st;
  RpcRequest r;
  if (!Admit(ctx, now, &deadline, &st) || !FillRequest(ctx, &r, kUnaryCall, now, deadline, &st)) {
    ctx->SetStatus(st);
    done(st);
    return;
  }
  const bool retry = !retry_methods_.empty() && retry_methods_.Match(r.func);
  const bool hedge = !hedge_methods_.empty() && hedge_methods_.Match(r.func);
  if (retry || hedge) {
    // More than one attempt may go: the message is serialized once and each attempt encodes
    // its own request around it (its own id, and endpoint).
    auto op = std::make_shared<Op>();
    std::string err;
    if (!SerializeMessageBody(req, kContentTypeProtobuf, &op->body, &err)) {
      st = Status(kClientEncodeErr, "cannot encode the request: " + err);
      ctx->SetStatus(st);
      done(st);
      return;
    }
    op->ctx = ctx;
    op->rsp = rsp;
    op->done = std::move(done);
    op->tmpl = std::move(r);
    op->deadline_ns = deadline;
    op->reactor = PickReactor();
    op->reactor_index = static_cast<size_t>(model_->IndexOf(op->reactor));
    op->retry_max = retry ? config_.retry.max_attempts : 1;
    op->hedge_max = hedge ? config_.hedging.max_attempts : 1;
    op->hedge_delay_ns = !hedge ? 0
                         : config_.hedging.delay > 0
                             ? int64_t{config_.hedging.delay} * kNanosPerMilli
                             : latency_.Quantile(now, 0.95, kDefaultHedgeDelayNs);
    budget_->OnFirstAttempt();
    op->reactor->RunInLoop([this, op] {
      ops_[op->reactor_index].emplace(op.get(), op);
      StartAttempt(op);
    });
    return;
  }
  auto call = std::make_shared<Call>();
  if (!Dispatch(ctx, &r, &req, call.get(), nullptr, now, &st)) {
    ctx->SetStatus(st);
    done(st);
    return;
  }
  // A call with no deadline still gets a timer, far away, so nothing waits forever.
  call->deadline_ns = deadline > 0 ? deadline : now + 3600 * kNanosPerSecond;
  call->rsp = rsp;
  call->done = std::move(done);
  StartOnLoop(PickReactor(), std::move(call));
}

Status ServiceProxy::Impl::OnewayInvoke(const ClientContextPtr& ctx,
                                        const google::protobuf::MessageLite& req) {
  if (!codec_->SupportsOneway()) {
    return Status(kClientEncodeErr, "protocol " + std::string(codec_->Name()) +
                                        " has no one-way calls (client service " + config_.name +
                                        ")");
  }
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) return ctx->GetStatus();
  }
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  auto call = std::make_shared<Call>();
  Status st;
  RpcRequest r;
  if (!Admit(ctx, now, &deadline, &st) || !FillRequest(ctx, &r, kOnewayCall, now, deadline, &st) ||
      !Dispatch(ctx, &r, &req, call.get(), nullptr, now, &st)) {
    return st;
  }
  call->deadline_ns = deadline > 0 ? deadline : now + 3600 * kNanosPerSecond;
  StartOnLoop(PickReactor(), std::move(call));
  return Status();
}

void ServiceProxy::Impl::AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req,
                                          FrameDone done) {
  if (!filters_.Empty()) {
    ctx->SetStatus(Status());
    if (!RunFilters(FilterPoint::CLIENT_PRE_RPC_INVOKE, ctx)) {
      done(ctx->GetStatus(), ChainBuffer());
      return;
    }
    done = [this, ctx, done = std::move(done)](const Status& st, ChainBuffer&& frame) {
      ctx->SetStatus(st);
      RunFilters(FilterPoint::CLIENT_POST_RPC_INVOKE, ctx);
      done(ctx->GetStatus(), std::move(frame));
    };
  }
  const int64_t now = MonotonicNanos();
  int64_t deadline = 0;
  auto call = std::make_shared<Call>();
  Status st;
  if (!Admit(ctx, now, &deadline, &st) || !FillRequest(ctx, &req, kUnaryCall, now, deadline, &st) ||
      !Dispatch(ctx, &req, nullptr, call.get(), nullptr, now, &st)) {
    ctx->SetStatus(st);
    done(st, ChainBuffer());
    return;
  }
  call->deadline_ns = deadline > 0 ? deadline : now + 3600 * kNanosPerSecond;
  call->frame_done = std::move(done);
  StartOnLoop(PickReactor(), std::move(call));
}

// ServiceProxy: the public surface, forwarding to Impl.

ServiceProxy::ServiceProxy(ClientServiceConfig config, ThreadModel* model)
    : impl_(std::make_unique<Impl>(std::move(config), model)) {}

ServiceProxy::~ServiceProxy() = default;

bool ServiceProxy::Init(std::string* err) { return impl_->Init(err); }
void ServiceProxy::SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
  impl_->SetBufferBudget(std::move(budget));
}
void ServiceProxy::Stop() { impl_->Stop(); }
const ClientServiceConfig& ServiceProxy::config() const { return impl_->config(); }
ThreadModel* ServiceProxy::thread_model() const { return impl_->model(); }

void ServiceProxy::AsyncUnaryInvoke(const ClientContextPtr& ctx,
                                    const google::protobuf::MessageLite& req,
                                    google::protobuf::MessageLite* rsp, Done done) {
  impl_->AsyncUnaryInvoke(ctx, req, rsp, std::move(done));
}

Status ServiceProxy::OnewayInvoke(const ClientContextPtr& ctx,
                                  const google::protobuf::MessageLite& req) {
  return impl_->OnewayInvoke(ctx, req);
}

void ServiceProxy::AsyncInvokeFrame(const ClientContextPtr& ctx, RpcRequest&& req, FrameDone done) {
  impl_->AsyncInvokeFrame(ctx, std::move(req), std::move(done));
}

Status ServiceProxy::UnaryInvoke(const ClientContextPtr& ctx,
                                 const google::protobuf::MessageLite& req,
                                 google::protobuf::MessageLite* rsp) {
  return UnaryInvoke(ctx, req, rsp, "AsyncUnaryInvoke");
}

Status ServiceProxy::UnaryInvoke(const ClientContextPtr& ctx,
                                 const google::protobuf::MessageLite& req,
                                 google::protobuf::MessageLite* rsp, std::string_view async_name) {
  return WaitFor(ctx, async_name,
                 [&](Done done) { AsyncUnaryInvoke(ctx, req, rsp, std::move(done)); });
}

bool ServiceProxy::MayBlock(const ClientContextPtr& ctx, std::string_view async_name) {
  if (impl_->model()->MayBlockCurrentThread()) return true;
  std::string why = fmt::format(
      "a synchronous call to {} would block a merge worker thread (merged thread model); call "
      "{} instead (it returns a Future), or run the server in the fiber model",
      config().name, async_name);
  // Logged as well: the caller may drop the status, and the fix is in the code, not the peer.
  TRPC_LOG_EVERY_MS(log::Level::kError, 10000, "{}", why);
  ctx->SetStatus(Status(kServerSystemErr, std::move(why)));
  return false;
}

// The status is written before Set(), which orders it before Wait() returns.
struct ServiceProxy::SyncWait::State {
  fiber::Event done;
  Status status;
};

ServiceProxy::SyncWait::SyncWait() : state_(std::make_shared<State>()) {}
ServiceProxy::SyncWait::~SyncWait() = default;

ServiceProxy::Done ServiceProxy::SyncWait::Callback() {
  return [state = state_](const Status& st) {
    state->status = st;
    state->done.Set();
  };
}

Status ServiceProxy::SyncWait::Wait() {
  state_->done.Wait();
  return state_->status;
}

}  // namespace trpc
