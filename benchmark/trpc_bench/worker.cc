#include "benchmark/trpc_bench/worker.h"

#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/client/detail/client_streams.h"
#include "trpc/codec/http/detail/http_client_codec.h"

namespace trpc::bench {

namespace {

// The trans_info key of a tagged request; the benchmark echo server delays such requests.
constexpr char kTailKey[] = "trpc-bench-tail";
// The same tag over HTTP, as a request header.
constexpr char kHttpTailHeader[] = "X-Trpc-Bench-Tail";
// Pause before a connection that was lost is made again, and before a slot whose call was
// refused on the spot (e.g. 124, the write queue is full) tries again: never a busy loop.
constexpr int64_t kReconnectDelayNs = 100 * kNanosPerMilli;
constexpr int64_t kRetryDelayNs = 1 * kNanosPerMilli;

// Replies up to this size are kept per slot to recognize a repeat of a successful one.
constexpr size_t kMaxCachedReply = 4096;
// --stream: how often the messages in flight are checked against --timeout (a tenth of it,
// within these bounds).
constexpr int64_t kMinSweepNs = 1 * kNanosPerMilli;
constexpr int64_t kMaxSweepNs = 100 * kNanosPerMilli;
// --stream, open loop: messages in flight on one stream at most (what waits beyond the
// server's window waits in the stream's core, so this bounds that too).
constexpr size_t kMaxStreamInflight = 1000;

int64_t NanosToMicros(int64_t ns) { return (ns + kNanosPerMicro / 2) / kNanosPerMicro; }

bool SameBytes(const ChainBuffer& buf, const std::string& bytes) {
  if (buf.size() != bytes.size()) return false;
  size_t offset = 0;
  for (size_t i = 0; i < buf.SpanCount(); ++i) {
    std::string_view span = buf.Span(i);
    if (std::memcmp(span.data(), bytes.data() + offset, span.size()) != 0) return false;
    offset += span.size();
  }
  return true;
}

}  // namespace

Worker::Worker(const Options& o, int index, int connections, uint64_t quota, uint64_t hot_quota,
               std::shared_ptr<ClientCodec> codec, Coordinator* coordinator, ShareGate* gate)
    : o_(o),
      index_(index),
      connection_count_(connections),
      codec_(std::move(codec)),
      coordinator_(coordinator),
      gate_(gate),
      has_hot_(o.hot_on() && index == 0) {
  NetAddress::Parse(o.target, &target_);
  header_.timeout_ms = static_cast<uint32_t>(o.timeout_ms);
  header_.callee = o.Callee();
  header_.func = o.func;
  header_.authority = o_.target;  // (the options outlive the worker)
  plan_.offset = index;
  plan_.stride = o.threads;
  plan_.quota = quota;
  hot_plan_.hot = true;
  hot_plan_.quota = hot_quota;
  if (o.open_loop()) {
    plan_.period_ns = 1e9 / ((1 - o.hot_share) * o.qps);
    if (o.hot_on()) hot_plan_.period_ns = 1e9 / (o.hot_share * o.qps);
  }
  deadline_ns_ = static_cast<int64_t>(o.timeout_ms) * kNanosPerMilli;
  tail_value_ = o.tail_kind + ":" + std::to_string(o.tail_delay_us);
}

Worker::~Worker() = default;

bool Worker::EncodeHttpRequest(const Options& o, ClientCodec* codec, const std::string* tail_value,
                               ChainBuffer* out) {
  static constexpr std::pair<std::string_view, http::HttpMethod> kMethods[] = {
      {"GET", http::HttpMethod::kGet},        {"HEAD", http::HttpMethod::kHead},
      {"POST", http::HttpMethod::kPost},      {"PUT", http::HttpMethod::kPut},
      {"DELETE", http::HttpMethod::kDelete},  {"PATCH", http::HttpMethod::kPatch},
      {"OPTIONS", http::HttpMethod::kOptions}};
  auto request = std::make_unique<http::HttpClientRequest>();
  for (const auto& [name, method] : kMethods) {
    if (name == o.http_method) request->method = method;
  }
  request->target = o.http_path;
  if (tail_value != nullptr) request->headers.emplace_back(kHttpTailHeader, *tail_value);
  RpcRequest req;
  req.authority = o.target;
  req.protocol = std::move(request);
  if (o.http_body()) req.body.Append(o.payload);
  return codec->EncodeRequest(&req, nullptr, out);
}

void Worker::Run() {
  if (!o_.cpus.empty()) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int cpu = o_.cpus[index_ % o_.cpus.size()];
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) {
      std::fprintf(stderr, "trpc_bench: cannot pin thread %d to CPU %d: %s\n", index_, cpu,
                   std::strerror(errno));
    }
  }
  // The default timer slack (50 us) would let every pacing wake-up come up to 50 us late.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  reactor_.Post([this] { Setup(); });
  reactor_.Run();
}

void Worker::Setup() {
  body_.set_msg(o_.payload);
  if (o_.http()) {
    EncodeHttpRequest(o_, codec_.get(), nullptr, &http_frame_);
    if (o_.tail_on()) EncodeHttpRequest(o_, codec_.get(), &tail_value_, &http_tail_frame_);
  }
  if (o_.stream) {
    stream_msg_bytes_ = body_.SerializeAsString();
    stream_msg_.Append(stream_msg_bytes_.data(), stream_msg_bytes_.size());
  }
  conns_.resize(connection_count_);
  size_t slot_count = 0;
  for (int i = 0; i < connection_count_; ++i) {
    Conn& c = conns_[i];
    bool hot = has_hot_ && i == 0;
    c.plan = hot ? &hot_plan_ : &plan_;
    c.first_slot = slot_count;
    c.slot_count = o_.stream ? o_.streams_per_connection : hot ? o_.hot_inflight : o_.inflight;
    slot_count += c.slot_count;
  }
  slots_.resize(slot_count);
  hot_plan_.free.assign(has_hot_ ? o_.hot_inflight : 0, nullptr);
  plan_.free.assign(slot_count - hot_plan_.free.size(), nullptr);
  for (int i = 0; i < connection_count_; ++i) {
    Conn& c = conns_[i];
    for (int k = 0; k < c.slot_count; ++k) {
      Slot& s = slots_[c.first_slot + k];
      s.conn = &c;
      if (!o_.stream) EncodeSlot(&s);
    }
    if (!Connect(&c)) {
      ScheduleReconnect(&c);
    } else if (o_.stream) {
      // Opened before the start, so that the load does not begin with the opens.
      for (int k = 0; k < c.slot_count; ++k) OpenStream(&slots_[c.first_slot + k]);
    }
  }
  coordinator_->ReportReady();
}

bool Worker::Connect(Conn* c) {
  ConnectionOptions copts;
  copts.idle_timeout_ms = 0;  // a paused open-loop run must not lose its connections
  copts.max_packet_size = 0xFFFFFFFFu;
  copts.tls = o_.tls_context;
  if (copts.tls != nullptr) copts.tls_host = target_.ip();
  c->client = std::make_shared<ClientConnection>(&reactor_, target_, codec_.get(), copts,
                                                 std::max(o_.timeout_ms, 1000));
  std::string err;
  if (c->client->Connect(&err)) return true;
  std::fprintf(stderr, "trpc_bench: %s\n", err.c_str());
  return false;
}

void Worker::EncodeSlot(Slot* s) {
  Conn& c = *s->conn;
  s->id = ++c.next_id == 0 ? ++c.next_id : c.next_id;
  if (o_.http()) {
    s->frame = http_frame_.Clone();
    if (o_.tail_on()) s->tail_frame = http_tail_frame_.Clone();
    return;
  }
  header_.request_id = s->id;
  header_.trans_info.clear();
  s->frame.Clear();
  codec_->EncodeRequest(&header_, &body_, &s->frame);
  if (o_.tail_on()) {
    header_.trans_info[kTailKey] = tail_value_;
    s->tail_frame.Clear();
    codec_->EncodeRequest(&header_, &body_, &s->tail_frame);
  }
}

void Worker::Start(const Schedule& s) {
  reactor_.Post([this, s] { StartInLoop(s); });
}

void Worker::StartInLoop(const Schedule& s) {
  schedule_ = s;
  phase_ = Phase::kRunning;
  plan_.sending = true;
  hot_plan_.sending = has_hot_;
  if (s.measure_end_ns != INT64_MAX) {
    reactor_.AddTimer(s.measure_end_ns, [this] { StopSending(/*window_ended=*/true); });
  }
  // At the start time (not before: a closed loop would send uncounted calls): every slot
  // sends (closed loop), or joins the free ring and the plan starts (open loop).
  reactor_.AddTimer(s.start_ns, [this] {
    for (Slot& slot : slots_) Release(&slot);
    // (The streams' plan does not wait for a free slot to start.)
    if (o_.stream && o_.open_loop()) SendDue(&plan_);
  });
  if (o_.stream) {
    sweep_timer_ = reactor_.AddTimer(s.start_ns, [this] { SweepTimeouts(); });
  }
}

int64_t Worker::Intended(const Plan& p, uint64_t j) const {
  double k = static_cast<double>(p.offset) + static_cast<double>(p.stride) * j;
  return schedule_.start_ns + std::llround(k * p.period_ns);
}

void Worker::SendDue(Plan* p) {
  if (phase_ != Phase::kRunning || !p->sending) return;
  int64_t now = MonotonicNanos();
  while (true) {
    int64_t t = Intended(*p, p->next_j);
    if (t >= schedule_.measure_end_ns) {
      StopPlan(p, /*window_ended=*/true);
      return;
    }
    if (t > now) {
      ArmPacer(p, t);
      return;
    }
    bool measured = t >= schedule_.measure_start_ns;
    if (measured && p->measured_sent >= p->quota) {
      StopPlan(p, /*window_ended=*/false);
      return;
    }
    if (now - t >= deadline_ns_) {
      // The caller's deadline passed while the request waited for a connection (or for a
      // late pacer): its caller has given up, so it is not sent.
      if (measured) ++p->measured_sent;
      ++p->next_j;
      RecordExpired(*p, measured, now);
      continue;
    }
    Slot* s = o_.stream ? NextStream() : PopFree(p);
    if (s == nullptr) {
      // Every slot is busy (every stream closed or full): the request waits, and completions
      // (a stream's open or echo) call SendDue() again.
      p->stalled = true;
      if (measured && p->waited_j != p->next_j) {
        p->waited_j = p->next_j;
        ++stats_.slot_waits;
      }
      return;
    }
    p->stalled = false;
    if (measured) ++p->measured_sent;
    ++p->next_j;
    Send(s, t, measured, now);
    now = MonotonicNanos();
  }
}

void Worker::SendNext(Slot* s, int64_t now_ns) {
  Plan* p = s->conn->plan;
  if (phase_ != Phase::kRunning || !p->sending) return;
  int64_t now = now_ns != 0 ? now_ns : MonotonicNanos();
  if (now >= schedule_.measure_end_ns) {
    StopSending(/*window_ended=*/true);
    return;
  }
  bool measured = now >= schedule_.measure_start_ns;
  if (measured && p->measured_sent >= p->quota) {
    StopPlan(p, /*window_ended=*/false);
    return;
  }
  if (gate_ != nullptr && !gate_->TryAcquire(p->hot)) {
    // This side is ahead of the share: the slot waits until the gate wakes this thread.
    PushFree(s);
    gate_->Wait(index_, p->hot);
    return;
  }
  if (measured) ++p->measured_sent;
  Send(s, now, measured, now);
}

void Worker::Send(Slot* s, int64_t intended_ns, bool measured, int64_t now_ns) {
  if (o_.stream) {
    SendOnStream(s, intended_ns, measured, now_ns);
    return;
  }
  Conn& c = *s->conn;
  // Every round(1/ratio)-th request on average, deterministically: the n-th send is tagged when
  // floor(n * ratio) steps up.
  uint64_t n = sends_++;
  s->tagged = o_.tail_on() && std::floor((n + 1) * o_.tail_ratio) > std::floor(n * o_.tail_ratio);
  s->intended_ns = intended_ns;
  s->sent_ns = now_ns;
  s->measured = measured;
  s->busy = true;
  ++busy_;
  ++c.busy;
  if (measured && o_.open_loop()) stats_.lateness.Record(NanosToMicros(now_ns - intended_ns));
  s->in_call = true;
  // Two words of capture: fits std::function's inline buffer, so no allocation per call.
  c.client->Call(s->id, (s->tagged ? s->tail_frame : s->frame).Clone(),
                 now_ns + o_.timeout_ms * kNanosPerMilli,
                 [this, s](Status status, ChainBuffer&& frame) {
                   OnDone(s, std::move(status), std::move(frame));
                 });
  s->in_call = false;
}

void Worker::OnDone(Slot* s, Status status, ChainBuffer&& frame) {
  int64_t now = MonotonicNanos();
  Conn& c = *s->conn;
  s->busy = false;
  --busy_;
  --c.busy;
  if (phase_ == Phase::kStopped) return;

  bool ok = false;
  std::string code;
  if (status.OK()) {
    ++stats_.responses;
    ok = CheckReply(s, std::move(frame), &code);
  } else {
    code = std::to_string(status.GetFrameworkRetCode());
    // The reply may still come, late: a fresh id makes ClientConnection ignore it.
    if (status.GetFrameworkRetCode() == kClientInvokeTimeoutErr) EncodeSlot(s);
  }
  Record(*s, ok, code, now);
  // The reply's clock reading doubles as the next request's send time (closed loop): the
  // request is only queued here and leaves with the read batch's flush anyway, so a second
  // reading would not be closer to the real send, and it cost ~7% of the client's CPU at depth 16.
  Release(s, now);
  MaybeFinish();
}

bool Worker::CheckHttpReply(const ChainBuffer& frame, std::string* code) {
  // The frame starts with the final response's status line, checked by the codec's split:
  // "HTTP/1.1 200 ...". Its code is all that is read.
  constexpr size_t kStatusEnd = 12;
  char scratch[kStatusEnd];
  if (frame.size() < kStatusEnd) {
    *code = std::to_string(kClientDecodeErr);
    return false;
  }
  const char* p = frame.Peek(kStatusEnd, scratch);
  const int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
  if (status >= 200 && status < 300) return true;
  *code = "http:" + std::to_string(status);
  return false;
}

bool Worker::CheckReply(Slot* s, ChainBuffer&& frame, std::string* code) {
  if (o_.http()) return CheckHttpReply(frame, code);
  // A reply byte-identical to this slot's last successful one decodes the same: skip the
  // decode (a protobuf parse, ~0.3 us, the largest cost of our own on the hot path). An echo
  // of a fixed request repeats exactly, since the slot's request id only changes on timeout.
  std::string& last_ok = s->ok_reply[s->tagged ? 1 : 0];
  if (!last_ok.empty() && SameBytes(frame, last_ok)) return true;
  std::string bytes = frame.size() <= kMaxCachedReply ? frame.ToString() : std::string();
  RpcResponse rsp;
  std::string err;
  if (!codec_->DecodeResponse(std::move(frame), &rsp, &err)) {
    *code = std::to_string(kClientDecodeErr);
    return false;
  }
  if (rsp.ret != 0) {
    *code = std::to_string(rsp.ret);
    return false;
  }
  if (rsp.func_ret != 0) {
    *code = "func_ret:" + std::to_string(rsp.func_ret);
    return false;
  }
  last_ok = std::move(bytes);
  return true;
}

void Worker::Record(const Slot& s, bool ok, const std::string& code, int64_t now_ns) {
  if (!s.measured) return;
  last_done_ns_ = std::max(last_done_ns_, now_ns);
  int64_t latency = NanosToMicros(now_ns - s.intended_ns);
  ++stats_.requests;
  if (s.conn->plan->hot) ++stats_.hot_requests;
  ++interval_.requests;
  if (s.tagged) ++stats_.tail_requests;
  if (!ok) {
    ++stats_.errors[code];
    if (code == std::to_string(kClientInvokeTimeoutErr)) ++stats_.timeouts;
    stats_.error_latency.Record(latency);
    ++interval_.errors;
    return;
  }
  ++stats_.ok;
  // The caller's view: a reply after its deadline (from the intended send time) is no use to
  // it, however OK. In the closed loop the call's own timer makes every OK reply timely.
  if (now_ns - s.intended_ns <= deadline_ns_) {
    ++stats_.good;
  } else {
    ++stats_.late;
  }
  if (s.tagged) {
    stats_.tail.Record(latency);
    return;
  }
  stats_.latency.Record(latency);
  interval_.latency.Record(latency);
  if (o_.open_loop()) stats_.uncorrected.Record(NanosToMicros(now_ns - s.sent_ns));
}

void Worker::RecordExpired(const Plan& p, bool measured, int64_t now_ns) {
  if (!measured) return;
  last_done_ns_ = std::max(last_done_ns_, now_ns);
  ++stats_.requests;
  if (p.hot) ++stats_.hot_requests;
  ++stats_.expired;
  ++stats_.timeouts;
  ++stats_.errors[std::to_string(kClientInvokeTimeoutErr)];
  // The caller gave up at its deadline, whenever the pacer noticed.
  stats_.error_latency.Record(NanosToMicros(deadline_ns_));
  ++interval_.requests;
  ++interval_.errors;
}

// Makes an idle slot available again: sends on it (closed loop) or queues it (open loop).
void Worker::Release(Slot* s, int64_t now_ns) {
  if (phase_ != Phase::kRunning || s->busy || s->queued) return;
  Conn& c = *s->conn;
  if (!c.client || !c.client->usable()) {
    // Parked until the connection is made again, once none of its calls is in flight.
    if (c.busy == 0) ScheduleReconnect(&c);
    return;
  }
  if (s->in_call) {
    // The call failed inside Call(): trying again at once would recurse (and spin).
    reactor_.AddTimer(MonotonicNanos() + kRetryDelayNs, [this, s] { Release(s); });
    return;
  }
  if (o_.stream && s->stream_state != StreamState::kReady) {
    // Opening: its answer releases the slot. Closed: open it (a pause after a failure first).
    if (s->stream_state == StreamState::kOpening || s->reopen_scheduled || !OpenStream(s)) return;
  }
  if (o_.stream && o_.open_loop()) {
    // The plan picks streams in turn: this one can take the messages that wait, if any.
    if (plan_.stalled) SendDue(&plan_);
    return;
  }
  if (!o_.open_loop()) {
    SendNext(s, now_ns);
    return;
  }
  PushFree(s);
  SendDue(s->conn->plan);
}

void Worker::PushFree(Slot* s) {
  Plan& p = *s->conn->plan;
  s->queued = true;
  p.free[(p.free_head + p.free_count) % p.free.size()] = s;
  ++p.free_count;
}

Worker::Slot* Worker::PopFree(Plan* p) {
  while (p->free_count > 0) {
    Slot* s = p->free[p->free_head];
    p->free_head = (p->free_head + 1) % p->free.size();
    --p->free_count;
    s->queued = false;
    if (s->conn->client && s->conn->client->usable()) return s;
    if (s->conn->busy == 0) ScheduleReconnect(s->conn);
  }
  return nullptr;
}

void Worker::WakeParked() {
  reactor_.Post([this] {
    RetryParked(&plan_);
    RetryParked(&hot_plan_);
  });
}

void Worker::RetryParked(Plan* p) {
  // Each parked slot once at most: one the gate parks again stays for the next wake-up.
  for (size_t n = p->free_count; n > 0 && p->free_count > 0; --n) {
    Slot* s = PopFree(p);
    if (s == nullptr) return;
    SendNext(s);
    if (s->queued) return;  // parked again: the gate is closed to this side
  }
}

void Worker::ArmPacer(Plan* p, int64_t deadline_ns) {
  // Armed already: for an earlier or equal time, since the plan only moves forward.
  if (p->pacer != 0) return;
  p->pacer = reactor_.AddTimer(deadline_ns, [this, p] {
    p->pacer = 0;
    SendDue(p);
  });
}

void Worker::StopSending(bool window_ended) {
  StopPlan(&plan_, window_ended);
  StopPlan(&hot_plan_, window_ended);
}

void Worker::StopPlan(Plan* p, bool window_ended) {
  if (phase_ != Phase::kRunning || !p->sending) return;
  p->sending = false;
  // The other side must not wait for this one any longer.
  if (gate_ != nullptr) gate_->Open();
  if (p->pacer != 0) {
    reactor_.CancelTimer(p->pacer);
    p->pacer = 0;
  }
  if (o_.open_loop() && window_ended) {
    // Requests of the window that were due but never got a free slot: the server (or the
    // client) could not keep up with the plan. Reported, never silently dropped.
    // Those whose deadline has passed already are expired, as the pacer would have found them.
    int64_t now = MonotonicNanos();
    for (int64_t t = Intended(*p, p->next_j); t < schedule_.measure_end_ns;
         t = Intended(*p, ++p->next_j)) {
      if (t < schedule_.measure_start_ns) continue;
      if (now - t >= deadline_ns_) {
        RecordExpired(*p, /*measured=*/true, now);
      } else {
        ++stats_.unsent;
      }
    }
  }
  if (plan_.sending || hot_plan_.sending) return;
  phase_ = Phase::kDraining;
  MaybeFinish();
}

void Worker::MaybeFinish() {
  if (phase_ != Phase::kDraining || busy_ > 0) return;
  phase_ = Phase::kFinished;
  if (sweep_timer_ != 0) {
    reactor_.CancelTimer(sweep_timer_);
    sweep_timer_ = 0;
  }
  coordinator_->ReportFinished(last_done_ns_);
}

void Worker::ScheduleReconnect(Conn* c) {
  if (phase_ != Phase::kRunning && phase_ != Phase::kConnected) return;
  if (c->reconnect_scheduled) return;
  c->reconnect_scheduled = true;
  reactor_.AddTimer(MonotonicNanos() + kReconnectDelayNs, [this, c] { Reconnect(c); });
}

void Worker::Reconnect(Conn* c) {
  c->reconnect_scheduled = false;
  if (phase_ != Phase::kRunning && phase_ != Phase::kConnected) return;
  if (!Connect(c)) {
    ScheduleReconnect(c);
    return;
  }
  // The old connection's streams ended with it.
  if (o_.stream) {
    for (int k = 0; k < c->slot_count; ++k) ForgetStream(&slots_[c->first_slot + k]);
  }
  for (int k = 0; k < c->slot_count; ++k) Release(&slots_[c->first_slot + k]);
}

// ---- --stream ------------------------------------------------------------------------------

bool Worker::OpenStream(Slot* s) {
  Conn& c = *s->conn;
  if (!c.client || !c.client->usable()) return false;  // (the connection's remake opens it)
  auto* streams = detail::ClientStreams::Of(c.client.get(), codec_.get());
  Status st;
  if (streams == nullptr) {
    st = Status(kClientEncodeErr, "protocol " + o_.protocol + " has no client streams");
  } else {
    // The head of the stream, as ServiceProxy's AsyncOpenStream fills it: the method, the
    // callee, protobuf messages, and gRPC's :authority.
    RpcRequest head;
    head.func = o_.func;
    head.callee = o_.Callee();
    head.caller = "trpc_bench";
    head.content_type = kContentTypeProtobuf;
    head.timeout_ms = static_cast<uint32_t>(o_.timeout_ms);
    head.authority = o_.target;
    const uint32_t gen = ++s->stream_gen;
    s->stream_state = StreamState::kOpening;
    s->stream = streams->Open(
        head, /*max_message_bytes=*/0xFFFFFFFFu, MonotonicNanos() + deadline_ns_,
        [this, s, gen](const Status& opened) { OnStreamOpened(s, gen, opened); }, &st);
    if (s->stream != nullptr) {
      if (!streams->opens_at_once()) return false;
      s->stream_state = StreamState::kReady;
      ++stats_.streams_opened;
      return true;
    }
  }
  s->stream_state = StreamState::kClosed;
  ++stats_.open_failures[std::to_string(st.GetFrameworkRetCode())];
  ScheduleReopen(s);
  return false;
}

void Worker::OnStreamOpened(Slot* s, uint32_t gen, const Status& status) {
  // Called from the connection's close too: at Stop() the slots are going away.
  if (phase_ == Phase::kStopped || s->stream_gen != gen) return;
  if (status.OK()) {
    s->stream_state = StreamState::kReady;
    ++stats_.streams_opened;
    Release(s);
    return;
  }
  s->stream.reset();
  s->stream_state = StreamState::kClosed;
  int32_t code = status.GetFrameworkRetCode();
  ++stats_.open_failures[code != 0 ? std::to_string(code)
                                   : "func_ret:" + std::to_string(status.GetFuncRetCode())];
  ScheduleReopen(s);
}

Worker::Slot* Worker::NextStream() {
  for (size_t n = 0; n < slots_.size(); ++n) {
    Slot* s = &slots_[next_stream_];
    next_stream_ = (next_stream_ + 1) % slots_.size();
    if (s->stream_state == StreamState::kReady && s->inflight.size() < kMaxStreamInflight &&
        s->conn->client && s->conn->client->usable()) {
      return s;
    }
  }
  return nullptr;
}

void Worker::SendOnStream(Slot* s, int64_t intended_ns, bool measured, int64_t now_ns) {
  Conn& c = *s->conn;
  ++sends_;
  s->inflight.push_back(InFlight{intended_ns, now_ns, measured});
  s->busy = true;
  ++busy_;
  ++c.busy;
  if (measured && o_.open_loop()) stats_.lateness.Record(NanosToMicros(now_ns - intended_ns));
  const uint32_t gen = s->stream_gen;
  s->in_call = true;  // (a failure here must not send again at once: Release() waits)
  Future<> written = s->stream->AsyncWrite(stream_msg_.Clone());
  if (written.IsFailed()) {
    DropStream(s, written.GetException(), now_ns);
  } else if (!written.IsReady()) {
    // Waiting for the server's window: only a failure matters (the echo completes the call).
    std::move(written).Then([this, s, gen](Future<>&& f) {
      if (phase_ == Phase::kStopped || s->stream_gen != gen || !f.IsFailed()) return;
      DropStream(s, f.GetException(), MonotonicNanos());
      MaybeFinish();
    });
  }
  s->in_call = false;
  if (s->stream_gen == gen) ReadEchoes(s);
  MaybeFinish();
}

void Worker::ReadEchoes(Slot* s) {
  // An echo completed below may send the next message (closed loop), which comes back here: the
  // loop running already reads its echo too.
  if (s->reading) return;
  s->reading = true;
  const uint32_t gen = s->stream_gen;
  while (s->stream_gen == gen && !s->inflight.empty()) {
    Future<ChainBuffer> echo = s->stream->AsyncRead();
    if (!echo.IsReady() && !echo.IsFailed()) {
      // A dropped stream's read ends with it, as every read does when the connection closes at
      // Stop(): neither continues a live stream.
      std::move(echo).Then([this, s, gen](Future<ChainBuffer>&& e) {
        if (phase_ == Phase::kStopped || s->stream_gen != gen) return;
        s->reading = false;
        OnEcho(s, std::move(e));
        ReadEchoes(s);
        MaybeFinish();
      });
      return;  // (`reading` stays set while the read is pending)
    }
    OnEcho(s, std::move(echo));
  }
  if (s->stream_gen == gen) s->reading = false;
}

void Worker::OnEcho(Slot* s, Future<ChainBuffer>&& echo) {
  int64_t now = MonotonicNanos();
  if (echo.IsFailed()) {
    Status why = echo.GetException();
    // The server ended the stream (gRPC: a refusal such as UNIMPLEMENTED comes this way): its
    // status says why, where it is an error.
    if (why.StreamEof()) {
      if (Status final = s->stream->FinalStatus(); !final.OK()) why = final;
    }
    DropStream(s, why, now);
    return;
  }
  ++stats_.responses;
  std::string code;
  bool ok = CheckEcho(echo.GetValue(), &code);
  CompleteOldest(s, ok, code, now);
  if (!o_.open_loop()) {
    Release(s, now);
  } else if (plan_.stalled) {
    SendDue(&plan_);  // the stream has room again
  }
}

bool Worker::CheckEcho(const ChainBuffer& echo, std::string* code) {
  // The echo of a HelloRequest is a HelloReply of the same bytes (the same field): no parse.
  if (SameBytes(echo, stream_msg_bytes_)) return true;
  test::helloworld::HelloReply rsp;
  if (rsp.ParseFromString(echo.ToString())) return true;
  *code = std::to_string(kClientDecodeErr);
  return false;
}

void Worker::CompleteOldest(Slot* s, bool ok, const std::string& code, int64_t now_ns) {
  const InFlight& m = s->inflight.front();
  s->intended_ns = m.intended_ns;
  s->sent_ns = m.sent_ns;
  s->measured = m.measured;
  s->tagged = false;
  s->inflight.pop_front();
  s->busy = !s->inflight.empty();
  --busy_;
  --s->conn->busy;
  Record(*s, ok, code, now_ns);
}

void Worker::DropStream(Slot* s, const Status& status, int64_t now_ns) {
  std::shared_ptr<detail::StreamCore> core = std::move(s->stream);
  ForgetStream(s);  // (its messages in flight stay, to be failed here)
  ++stats_.streams_dropped;
  int32_t ret = status.GetFrameworkRetCode();
  const std::string code =
      ret != 0 ? std::to_string(ret) : "func_ret:" + std::to_string(status.GetFuncRetCode());
  while (!s->inflight.empty()) CompleteOldest(s, false, code, now_ns);
  // Ends it on the wire too (unless it has ended already); its pending read and writes fail at
  // once, into continuations that see the generation changed.
  if (core != nullptr) core->Reset(Status(kClientCanceledErr, "trpc_bench dropped the stream"));
  ScheduleReopen(s);
}

void Worker::ForgetStream(Slot* s) {
  ++s->stream_gen;
  s->stream.reset();
  s->stream_state = StreamState::kClosed;
  s->reading = false;
}

void Worker::ScheduleReopen(Slot* s) {
  if (s->reopen_scheduled) return;
  s->reopen_scheduled = true;
  reactor_.AddTimer(MonotonicNanos() + kReconnectDelayNs, [this, s] {
    s->reopen_scheduled = false;
    Release(s);
  });
}

void Worker::SweepTimeouts() {
  sweep_timer_ = 0;
  if (phase_ != Phase::kRunning && phase_ != Phase::kDraining) return;
  const int64_t timeout_ns = static_cast<int64_t>(o_.timeout_ms) * kNanosPerMilli;
  int64_t now = MonotonicNanos();
  for (Slot& s : slots_) {
    if (!s.inflight.empty() && now - s.inflight.front().sent_ns >= timeout_ns) {
      DropStream(&s, Status(kClientInvokeTimeoutErr, "no echo within the timeout"), now);
    }
  }
  MaybeFinish();
  if (phase_ != Phase::kRunning && phase_ != Phase::kDraining) return;
  const int64_t every = std::clamp(timeout_ns / 10, kMinSweepNs, kMaxSweepNs);
  sweep_timer_ = reactor_.AddTimer(now + every, [this] { SweepTimeouts(); });
}

void Worker::SnapshotInterval(int round) {
  reactor_.Post([this, round] {
    coordinator_->ReportInterval(round, interval_);
    interval_.Reset();
  });
}

void Worker::Stop() {
  reactor_.Post([this] {
    phase_ = Phase::kStopped;
    for (Conn& c : conns_) {
      if (c.client) c.client->Close("trpc_bench done");
    }
    conns_.clear();
    slots_.clear();
    reactor_.Stop();
  });
}

}  // namespace trpc::bench
