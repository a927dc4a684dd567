#include "trpc/server/detail/service_adapter.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/server/detail/parked_work.h"

namespace trpc::detail {

namespace {
// Method counters live as long as the process (see service_adapter.h): a few hundred bytes per
// method and reactor, per service start.
MethodCounters* KeepMethodCounters(size_t n) {
  static std::mutex mu;
  static auto* kept = new std::vector<std::unique_ptr<MethodCounters[]>>();
  std::lock_guard lock(mu);
  kept->push_back(std::make_unique<MethodCounters[]>(n));
  return kept->back().get();
}
}  // namespace

ServiceAdapter::ServiceAdapter(const ServiceConfig& config, ServicePtr service, ThreadModel* model,
                               std::shared_ptr<ServerCodec> codec, const ServerFilterChain* filters)
    : config_(config),
      service_(std::move(service)),
      model_(model),
      codec_(std::move(codec)),
      filters_(filters),
      accept_reactor_(model->GetReactor(0)),
      conns_(model->ReactorCount()),
      counters_(model->ReactorCount()),
      traffic_(model->ReactorCount()) {
  conn_options_.max_packet_size = config.max_packet_size;
  conn_options_.max_pending_write_bytes = config.max_pending_write_bytes;
  conn_options_.idle_timeout_ms = config.idle_time;
  conn_options_.frame_read_timeout_ms = config.read_frame_timeout;
  conn_options_.max_pending_requests = config.max_pending_requests;
  if (config.max_concurrency > 0 || config.max_concurrency_auto) {
    limiter_ =
        std::make_unique<ConcurrencyLimiter>(config.max_concurrency, config.max_concurrency_auto,
                                             model->ReactorCount(), model->HandlesInline());
  }
  acceptor_ = std::make_unique<Acceptor>(
      accept_reactor_, [this](int fd, const NetAddress& peer) { OnNewConnection(fd, peer); });
  BuildMethodTable();
}

void ServiceAdapter::BuildMethodTable() {
  std::vector<std::pair<std::string, const RpcMethodHandler*>> methods;
  service_->ForEachMethod([&](const std::string& name, const RpcMethodHandler* handler) {
    if (handler != nullptr) methods.emplace_back(name, handler);
  });
  method_names_ = {"unknown"};
  if (!methods.empty()) {
    uint32_t lo = UINT32_MAX, hi = 0;
    for (const auto& [name, h] : methods) {
      lo = std::min(lo, h->id());
      hi = std::max(hi, h->id());
    }
    first_handler_id_ = lo;
    slot_of_handler_.assign(hi - lo + 1, 0);
    for (const auto& [name, h] : methods) {
      uint32_t& slot = slot_of_handler_[h->id() - lo];
      if (slot != 0) continue;  // one handler under two names: the first counts
      slot = static_cast<uint32_t>(method_names_.size());
      method_names_.push_back(name);
    }
  }
  method_counters_ = KeepMethodCounters(model_->ReactorCount() * method_names_.size());
}

ServiceAdapter::~ServiceAdapter() {
  Stop();
  if (budget_) budget_->DropSlots(this);
}

void ServiceAdapter::SetBufferBudget(std::shared_ptr<BufferBudget> budget) {
  budget_ = std::move(budget);
  budget_slots_.clear();
  for (size_t i = 0; budget_ && i < model_->ReactorCount(); ++i) {
    budget_slots_.push_back(budget_->NewSlot(model_->GetReactor(i), this));
  }
}

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

namespace {
// Waits this long after the stop's deadline for each worker to answer its calls on its own
// loop, then takes over the ones stuck in a handler; and at most this long for a takeover.
constexpr int64_t kLoopAnswerNs = 20 * kNanosPerMilli;
constexpr int64_t kTakeOverNs = 20 * kNanosPerMilli;

// One RunOnReactorsUntil() call, shared with the tasks it posts: a task that has not started
// by the deadline must find out, whenever its loop gets to it, that it must not run (the
// adapter may be gone by then).
struct ReactorJob {
  enum : int { kPending, kRunning, kDone, kAbandoned };
  ReactorJob(size_t n, std::function<void(size_t)> f) : fn(std::move(f)), state(n) {}
  std::function<void(size_t)> fn;
  std::vector<std::atomic<int>> state;  // per reactor index
  std::mutex mu;
  std::condition_variable cv;
};
}  // namespace

std::vector<bool> ServiceAdapter::RunOnReactorsUntil(const std::vector<size_t>& which,
                                                     const std::function<void(size_t)>& fn,
                                                     int64_t deadline_ns) {
  auto job = std::make_shared<ReactorJob>(model_->ReactorCount(), fn);
  for (size_t i : which) {
    model_->GetReactor(i)->RunInLoop([job, i] {
      // pending -> running here, pending -> abandoned by the waiter at the deadline: exactly
      // one of them happens (acq_rel: the waiter sees what fn wrote once it sees kDone).
      int pending = ReactorJob::kPending;
      if (!job->state[i].compare_exchange_strong(pending, ReactorJob::kRunning,
                                                 std::memory_order_acq_rel)) {
        return;
      }
      job->fn(i);
      std::lock_guard lock(job->mu);
      job->state[i].store(ReactorJob::kDone, std::memory_order_release);
      job->cv.notify_all();
    });
  }
  std::vector<bool> ran(model_->ReactorCount(), false);
  std::unique_lock lock(job->mu);
  for (size_t i : which) {
    for (;;) {
      int st = job->state[i].load(std::memory_order_acquire);
      if (st == ReactorJob::kDone) break;
      if (st == ReactorJob::kPending && deadline_ns >= 0 && MonotonicNanos() >= deadline_ns &&
          job->state[i].compare_exchange_strong(st, ReactorJob::kAbandoned,
                                                std::memory_order_acq_rel)) {
        break;
      }
      // (Running: fn never blocks, so this wait is short even past the deadline.)
      job->cv.wait_for(lock, std::chrono::milliseconds(1));
    }
    ran[i] = job->state[i].load(std::memory_order_acquire) == ReactorJob::kDone;
  }
  return ran;
}

void ServiceAdapter::StopAccepting(int64_t deadline_ns) {
  if (!started_ || accepting_stopped_) return;
  accepting_stopped_ = true;
  size_t index = static_cast<size_t>(model_->IndexOf(accept_reactor_));
  if (!RunOnReactorsUntil(
          {index}, [this](size_t) { acceptor_->Stop(); }, deadline_ns)[index]) {
    TRPC_LOG_ERROR(
        "service {}: its accepting worker is stuck in a handler: the listening socket stays "
        "open until the process exits",
        config_.name);
  }
}

bool ServiceAdapter::StopBy(int64_t deadline_ns) {
  if (!started_) return true;
  StopAccepting(deadline_ns);
  started_ = false;
  std::vector<size_t> all(model_->ReactorCount());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  // In-flight handlers finish and their replies are written (a connection with requests still
  // pending closes only after they end); nothing new is read. A worker stuck in a handler does
  // not run this; the deadline below deals with it.
  RunOnReactorsUntil(
      all,
      [this](size_t i) {
        std::vector<ConnectionPtr> conns;
        for (auto& [raw, conn] : conns_[i]) conns.push_back(conn);
        for (auto& conn : conns) conn->Shutdown("server stopping");
      },
      deadline_ns);
  while (conn_count_.load(std::memory_order_relaxed) > 0 && MonotonicNanos() < deadline_ns) {
    usleep(1000);
  }
  // The limit: every worker answers its calls still in handlers and closes its connections;
  // the ones that do not come back at once are taken over.
  std::vector<bool> cut = RunOnReactorsUntil(
      all, [this](size_t i) { CutAndClose(i); }, MonotonicNanos() + kLoopAnswerNs);
  workers_stuck_ = 0;
  for (size_t i = 0; i < cut.size(); ++i) {
    if (cut[i]) continue;
    ++workers_stuck_;
    TakeOver(i, MonotonicNanos() + kTakeOverNs);
  }
  if (uint64_t n = calls_cut(); n > 0) {
    TRPC_LOG_WARN(
        "service {}: stop_max_wait_time reached: answered {} calls still in handlers with {} "
        "(server stopped before the handler finished)",
        config_.name, n, static_cast<int>(kServerSystemErr));
  }
  return workers_stuck_ == 0;
}

void ServiceAdapter::AnswerCalls(detail::InFlightCalls* calls, bool takeover) {
  auto answer = [&](ServerContext* c) {
    ChainBuffer out;
    if (!c->CutByStop(&out)) return;  // its own reply came first
    calls_cut_.fetch_add(1, std::memory_order_relaxed);
    // A copy: once unlinked, the context (and with it maybe the last reference to a connection
    // that has closed) may be freed by its handler's thread.
    ConnectionPtr conn = c->conn_;
    uint64_t slot = c->reply_slot_;
    bool counted = c->counted_pending_;
    c->UnlinkInFlight();  // the last access: its handler's thread may free it from here on
    if (takeover) {
      conn->QueueReplyWhileLoopHeld(slot, std::move(out), counted);
    } else {
      conn->SendReply(slot, std::move(out), counted);
    }
  };
  // Every linked context is alive: one freed off its loop thread is handed to that loop to
  // free (ServerContext::FreeLastRef), and this loop (or, in a takeover, its waiting
  // worker) is not running that.
  for (ServerContext* c = calls->head; c != nullptr;) {
    ServerContext* next = c->in_flight_next_;
    if (c->adapter_ == this) answer(c);
    c = next;
  }
  // The slot's context: its handler holds it while the worker waits.
  if (takeover && calls->taken != nullptr && calls->taken->adapter_ == this) answer(calls->taken);
}

void ServiceAdapter::CutAndClose(size_t i) {
  AnswerCalls(detail::InFlightCalls::OfThisThread(model_->GetReactor(i)), /*takeover=*/false);
  auto conns = std::move(conns_[i]);
  conns_[i].clear();
  for (auto& [raw, conn] : conns) {
    // Writes the answers now (a graceful close still waiting for a reply posted by another
    // thread would flush them only later), then closes.
    conn->Send(ChainBuffer());
    conn->Close("server stopped");
  }
}

bool ServiceAdapter::TakeOver(size_t i, int64_t until_ns) {
  using detail::InFlightCalls;
  InFlightCalls* calls = InFlightCalls::Of(model_->GetReactor(i));
  for (;;) {
    uintptr_t v =
        calls != nullptr ? calls->slot.load(std::memory_order_acquire) : InFlightCalls::kIdle;
    // A context (in its handler) or kReleased (taken over by an earlier service's stop, still
    // in that handler). kBusy ends within a reply's queueing; idle: not in a handler.
    if (v >= InFlightCalls::kReleased &&
        calls->slot.compare_exchange_strong(v, InFlightCalls::kTaken, std::memory_order_acq_rel)) {
      if (v != InFlightCalls::kReleased) calls->taken = reinterpret_cast<ServerContext*>(v);
      AnswerCalls(calls, /*takeover=*/true);
      for (auto& [raw, conn] : conns_[i]) conn->FlushAndShutdownWhileLoopHeld();
      TRPC_LOG_WARN(
          "service {}: worker {} was stuck in a handler at the stop's limit: its calls were "
          "answered and its connections shut down from the stopping thread",
          config_.name, i);
      calls->slot.store(InFlightCalls::kReleased, std::memory_order_release);
      return true;
    }
    if (MonotonicNanos() >= until_ns) break;
    usleep(1000);
  }
  TRPC_LOG_ERROR(
      "service {}: worker {} did not come back at the stop's limit and is not in a handler: its "
      "connections stay open until the process exits",
      config_.name, i);
  return false;
}

ServiceStats ServiceAdapter::stats() const {
  ServiceStats s;
  s.connections_accepted = connections_accepted_.load(std::memory_order_relaxed);
  s.connections_refused = connections_refused_.load(std::memory_order_relaxed);
  s.protocol_errors = protocol_errors_.load(std::memory_order_relaxed);
  s.accept_backoffs = acceptor_->backoffs();
  for (const auto& c : counters_) {
    s.requests += c.requests.load(std::memory_order_relaxed);
    s.failed_requests += c.failed_requests.load(std::memory_order_relaxed);
    s.rejected_overload += c.rejected_overload.load(std::memory_order_relaxed);
    s.rejected_parked_limit += c.rejected_parked_limit.load(std::memory_order_relaxed);
    s.rejected_deadline_passed += c.rejected_deadline_passed.load(std::memory_order_relaxed);
    s.rejected_deadline_unmeetable +=
        c.rejected_deadline_unmeetable.load(std::memory_order_relaxed);
  }
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
  if (limiter_ != nullptr) {
    out->concurrency_limit = limiter_->limit();
    out->concurrency_in_flight = limiter_->in_flight();
  }
  out->accept_backoffs = s.accept_backoffs;
  for (const TrafficCounters& t : traffic_) {
    out->bytes_in += t.bytes_in.load(std::memory_order_relaxed);
    out->bytes_out += t.bytes_out.load(std::memory_order_relaxed);
  }
  size_t n = method_names_.size();
  out->methods.resize(n);
  for (size_t m = 0; m < n; ++m) {
    MethodMetrics& mm = out->methods[m];
    mm.name = method_names_[m];
    std::array<uint64_t, kErrorSlots> errors{};
    for (size_t r = 0; r < traffic_.size(); ++r) method_counters_[r * n + m].AddTo(&mm, &errors);
    MethodCounters::FinishErrors(errors, &mm);
  }
}

void ServiceAdapter::EvictIdleWhenFull() {
  TRPC_CHECK(model_->ReactorCount() == 1, "EvictIdleWhenFull needs a one-reactor model");
  evict_when_full_ = true;
}

bool ServiceAdapter::EvictLeastActive() {
  // The least recently active: a silent connection, or one idle between requests, goes before
  // one that has just sent its request (a /health probe that came in a moment ago).
  ConnectionPtr victim;
  for (const auto& [raw, conn] : conns_[0]) {
    if (conn->closed() || conn->pending_requests() > 0) continue;
    if (!victim || conn->last_active_ns() < victim->last_active_ns()) victim = conn;
  }
  if (!victim) return false;
  connections_refused_.fetch_add(1, std::memory_order_relaxed);
  TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                    "service {}: max_conn_num {} reached: closing the least recently active "
                    "connection ({}) to take a new one",
                    config_.name, config_.max_conn_num, victim->peer().ToString());
  victim->Close("max_conn_num reached: made room for a new connection", CloseCause::kLocal);
  return true;
}

void ServiceAdapter::OnNewConnection(int fd, const NetAddress& peer) {
  // Counted here, on the accepting thread, so the limit holds before the fd reaches a worker.
  if (conn_count_.load(std::memory_order_relaxed) >= config_.max_conn_num &&
      !(evict_when_full_ && EvictLeastActive())) {
    connections_refused_.fetch_add(1, std::memory_order_relaxed);
    ::close(fd);
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: refusing {}: max_conn_num {} reached",
                      config_.name, peer.ToString(), config_.max_conn_num);
    return;
  }
  conn_count_.fetch_add(1, std::memory_order_relaxed);
  connections_accepted_.fetch_add(1, std::memory_order_relaxed);
  Reactor* r = model_->NextReactor();
  size_t index = static_cast<size_t>(model_->IndexOf(r));
  r->RunInLoop([this, r, index, fd, peer] {
    ConnectionOptions options = conn_options_;
    options.traffic = &traffic_[index];
    if (!budget_slots_.empty()) options.budget = budget_slots_[index];
    auto conn = std::make_shared<Connection>(r, fd, peer, codec_.get(), this, options);
    conns_[index].emplace(conn.get(), conn);
    conn->Start();
  });
}

void ServiceAdapter::OnClose(Connection* conn, const std::string& reason) {
  if (conn->close_cause() == CloseCause::kProtocolError) {
    protocol_errors_.fetch_add(1, std::memory_order_relaxed);
  }
  TRPC_LOG_DEBUG("service {}: connection {} closed: {}", config_.name, conn->peer().ToString(),
                 reason);
  conn_count_.fetch_sub(1, std::memory_order_relaxed);
  conns_[ReactorIndex(conn)].erase(
      conn);  // the connection keeps itself alive until its event returns
}

void ServiceAdapter::OnFrame(Connection* conn, ChainBuffer&& frame) {
  int64_t recv_ns = conn->reactor()->LoopTimeNs();
  ServerContextPtr ctx(new ServerContext(conn->shared_from_this(), codec_.get(), recv_ns),
                       kAdoptRef);
  std::string err;
  if (!codec_->DecodeRequestWithState(std::move(frame), conn->codec_state(), &ctx->request(),
                                      &err)) {
    // A header that does not parse gets no reply: the stream can no longer be trusted.
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "service {}: bad request from {}: {}", config_.name,
                      conn->peer().ToString(), err);
    conn->Close("protocol error: " + err, CloseCause::kProtocolError);
    return;
  }
  uint32_t timeout_ms = ctx->request().timeout_ms;
  if (config_.timeout > 0 && (timeout_ms == 0 || config_.timeout < timeout_ms)) {
    timeout_ms = config_.timeout;
  }
  if (timeout_ms > 0) ctx->SetDeadlineNs(recv_ns + timeout_ms * kNanosPerMilli);
  size_t index = ReactorIndex(conn);
  ReactorCounters& counters = counters_[index];
  counters.requests.fetch_add(1, std::memory_order_relaxed);
  // Routed here, before the filters, so that every reply (a filter's refusal too) is counted
  // under its method.
  RpcMethodHandler* method = service_->Route(*ctx);
  ctx->SetMethodCounters(CountersOf(index, method));
  if (const uint32_t encoding = ctx->request().content_encoding; encoding != 0) [[unlikely]] {
    // No body compression is supported yet: a compressed body must not be read as plain. Ret 1,
    // as tRPC-Go answers a body it cannot decompress (docs/protocol.md).
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(
        Status(kServerDecodeErr, "unsupported content_encoding " + std::to_string(encoding)),
        nullptr);
    return;
  }
  if (parked_bound_) {
    // The process-wide bound comes first: past it, a parked handler more could exhaust the
    // process's memory mappings (fiber stacks) or memory, whatever service it belongs to.
    ParkedWork::Result r = ParkedWork::Instance().TryAcquire();
    if (r == ParkedWork::Result::kRefused) [[unlikely]] {
      counters.rejected_parked_limit.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      ctx->SendReply(Status(kServerOverloadErr, "server overloaded: max_parked_requests reached"),
                     nullptr);
      return;
    }
    ctx->parked_permit_ = r == ParkedWork::Result::kTaken;
  }
  if (limiter_ != nullptr) {
    // Before the filters and the body's parse: refusing must cost far less than serving.
    if (!limiter_->TryAdmit(index, recv_ns)) {
      counters.rejected_overload.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      ctx->SendReply(Status(kServerOverloadErr, "server overloaded: max_concurrency reached"),
                     nullptr);
      return;
    }
    ctx->SetLimiter(limiter_.get(), index);
  }
  if (!filters_->Empty()) {
    ctx->SetFilterChain(filters_);
    if (!ctx->RunFilters(FilterPoint::SERVER_POST_RECV_MSG)) {
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      ctx->SendReply(ctx->GetStatus(), nullptr);
      return;
    }
  }
  // An admitted request runs after the reads (merge too), so refusals do not wait behind it.
  const bool after_reads = limiter_ != nullptr;
  if (!model_->HandlesInline() || after_reads) {
    // Runs later: it counts against the connection's requests in flight until its reply.
    conn->BeginRequest();
    ctx->SetCountedPending();
  }
  ctx->adapter_ = this;
  ctx->handler_ = method;
  ctx->runs_on_loop_ = model_->HandlesInline();
  // The thread model runs the request (RunSubmitted) now or later; the reference handed over
  // here keeps the context alive until then.
  if (after_reads) {
    model_->SubmitAfterReads(conn->reactor(), static_cast<Task*>(ctx.release()));
  } else {
    model_->Submit(conn->reactor(), static_cast<Task*>(ctx.release()));
  }
}

void ServiceAdapter::RunSubmitted(const ServerContextPtr& ctx) {
  Connection* conn = ctx->connection();
  Reactor* r = conn->reactor();
  // On the connection's own worker (always in merge, the usual case in fiber) the reactor's
  // recent time serves the "too late to start" check: at most one reply old, and a late start
  // is still caught when the reply is sent. Elsewhere, a clock read.
  HandleRequest(ctx, ctx->handler_, counters_[ReactorIndex(conn)],
                r->InLoopThread() ? r->RecentTimeNs() : 0);
}

void ServiceAdapter::HandleRequest(const ServerContextPtr& ctx, RpcMethodHandler* method,
                                   ReactorCounters& counters, int64_t now_ns) {
  int64_t deadline = ctx->GetDeadlineNs();
  if (deadline > 0) {
    if (now_ns == 0) now_ns = MonotonicNanos();
    if (now_ns >= deadline) {
      counters.rejected_deadline_passed.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      ctx->SendReply(Status(kServerTimeoutErr, "deadline passed before the request was handled"),
                     nullptr);
      return;
    }
    // With a limiter, the service time is known: a request with less time left than that would
    // only be answered late, so its handler's time goes to one that can make it.
    if (limiter_ != nullptr && now_ns + limiter_->service_time_ns() > deadline) {
      counters.rejected_deadline_unmeetable.fetch_add(1, std::memory_order_relaxed);
      counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
      ctx->SendReply(Status(kServerTimeoutErr,
                            "deadline cannot be met: less time is left than "
                            "the service's no-load latency"),
                     nullptr);
      return;
    }
  }
  if (method == nullptr) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerNoFuncErr, "no such function: " + ctx->GetFuncName()), nullptr);
    return;
  }
  if (!ctx->RunFilters(FilterPoint::SERVER_PRE_RPC_INVOKE)) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(ctx->GetStatus(), nullptr);
    return;
  }
  ctx->MarkInvoked();
  if (limiter_ != nullptr) {
    // Where the limiter's service time starts (the queueing before this is measured apart).
    ctx->start_ns_ = now_ns != 0 ? now_ns : MonotonicNanos();
  }
  try {
    method->Handle(ctx);
  } catch (const std::exception& e) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerSystemErr, std::string("handler threw: ") + e.what()), nullptr);
  } catch (...) {
    counters.failed_requests.fetch_add(1, std::memory_order_relaxed);
    ctx->SendReply(Status(kServerSystemErr, "handler threw a non-std exception"), nullptr);
  }
}

}  // namespace trpc::detail
