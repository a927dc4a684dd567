#include "trpc/transport/detail/stream_core.h"

#include <chrono>
#include <mutex>
#include <string>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc::detail {

// ---- Reading ------------------------------------------------------------------------------

size_t StreamCore::TakeLocked(ChainBuffer* msg) {
  *msg = std::move(inbox_.front());
  inbox_.pop_front();
  inbox_bytes_ -= msg->size();
  if (count_unread_) conn_->AddStreamHeldBytes(-static_cast<int64_t>(msg->size()));
  last_read_compressed_.store(
      encoding_ != 0 || (msg->meta() != nullptr && msg->meta()->arrived_compressed),
      std::memory_order_relaxed);
  if (!flow_control_) return 0;
  // Credit goes back no sooner than past a quarter of the window (the protocol's rule), so the
  // loop hears of it only then: no hop per message.
  unreported_ += msg->size();
  if (unreported_ * 4 <= window_) return 0;
  return std::exchange(unreported_, 0);
}

Status StreamCore::InboxEndLocked() const {
  if (!end_status_.OK()) return end_status_;
  return Status(codes_.read_end, "end of the peer's messages");
}

void StreamCore::ReportConsumed(size_t n) {
  if (n == 0) return;
  conn_->reactor()->RunInLoop([self = shared_from_this(), n] {
    if (self->link_ != nullptr) self->link_->Consumed(self->id_, n);
  });
}

Status StreamCore::Read(ChainBuffer* msg, int64_t timeout_ms) {
  size_t report = 0;
  {
    std::unique_lock<fiber::Mutex> lock(mu_);
    auto ready = [this] { return !inbox_.empty() || remote_ended_; };
    if (timeout_ms < 0) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
      return Status(codes_.read_timeout,
                    "no message came within " + std::to_string(timeout_ms) + " ms");
    }
    if (inbox_.empty()) return InboxEndLocked();
    report = TakeLocked(msg);
  }
  ReportConsumed(report);
  return kSuccStatus;
}

Future<ChainBuffer> StreamCore::AsyncRead(int64_t timeout_ms) {
  ChainBuffer msg;
  size_t report = 0;
  uint64_t seq = 0;
  Future<ChainBuffer> waiting;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (read_waiter_.has_value()) {
      return MakeExceptionFuture<ChainBuffer>(
          Status(kServerSystemErr, "a stream takes one Read() at a time"));
    }
    if (inbox_.empty()) {
      if (remote_ended_) return MakeExceptionFuture<ChainBuffer>(InboxEndLocked());
      read_waiter_.emplace();
      seq = ++read_seq_;
      waiting = read_waiter_->GetFuture();
    } else {
      report = TakeLocked(&msg);
    }
  }
  if (waiting.Valid()) {
    if (timeout_ms >= 0) {
      conn_->reactor()->RunInLoop(
          [self = shared_from_this(), seq, timeout_ms] { self->ArmReadTimeout(seq, timeout_ms); });
    }
    return waiting;
  }
  ReportConsumed(report);
  return MakeReadyFuture<ChainBuffer>(std::move(msg));
}

void StreamCore::ArmReadTimeout(uint64_t seq, int64_t timeout_ms) {
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (!read_waiter_.has_value() || read_seq_ != seq) return;  // served meanwhile
  }
  Reactor* r = conn_->reactor();
  if (read_timer_ != 0) r->CancelTimer(read_timer_);
  read_timer_ = r->AddTimer(MonotonicNanos() + timeout_ms * kNanosPerMilli,
                            [self = shared_from_this(), seq, timeout_ms] {
                              self->read_timer_ = 0;
                              self->ExpireRead(seq, timeout_ms);
                            });
}

void StreamCore::ExpireRead(uint64_t seq, int64_t timeout_ms) {
  std::optional<Promise<ChainBuffer>> waiter;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (!read_waiter_.has_value() || read_seq_ != seq) return;
    waiter = std::move(read_waiter_);
    read_waiter_.reset();
  }
  waiter->SetException(
      Status(codes_.read_timeout, "no message came within " + std::to_string(timeout_ms) + " ms"));
}

void StreamCore::ServeReadWaiter() {
  std::optional<Promise<ChainBuffer>> waiter;
  ChainBuffer msg;
  Status end;
  size_t report = 0;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (!read_waiter_.has_value() || (inbox_.empty() && !remote_ended_)) return;
    waiter = std::move(read_waiter_);
    read_waiter_.reset();
    if (!inbox_.empty()) {
      report = TakeLocked(&msg);
    } else {
      end = InboxEndLocked();
    }
  }
  if (read_timer_ != 0) {
    conn_->reactor()->CancelTimer(read_timer_);  // (served before its timeout)
    read_timer_ = 0;
  }
  ReportConsumed(report);
  // Outside the lock: the continuation may read again at once.
  if (end.OK()) {
    waiter->SetValue(std::move(msg));
  } else {
    waiter->SetException(std::move(end));
  }
}

// ---- Writing ------------------------------------------------------------------------------

Status StreamCore::WriteRefusalLocked() const {
  if (writes_closed_) return Status(codes_.write_end, "the peer has finished the stream");
  if (ended_) {
    return end_status_.OK() ? Status(codes_.network, "the stream has ended") : end_status_;
  }
  if (finished_) return Status(codes_.write_end, "the stream was finished");
  return kSuccStatus;
}

void StreamCore::InOrderOnLoop(std::function<void()> fn) {
  Reactor* r = conn_->reactor();
  if (r->InLoopThread() && posted_.load(std::memory_order_relaxed) == 0) {
    fn();
    return;
  }
  posted_.fetch_add(1, std::memory_order_relaxed);
  r->Post([self = shared_from_this(), fn = std::move(fn)] {
    self->posted_.fetch_sub(1, std::memory_order_relaxed);
    fn();
  });
}

void StreamCore::PostSend(ChainBuffer&& msg) {
  // On the loop already (a merge worker's handler, a continuation) with nothing of this stream
  // queued there: send now, without boxing the message into a task.
  if (conn_->reactor()->InLoopThread() && posted_.load(std::memory_order_relaxed) == 0) {
    const std::shared_ptr<StreamCore> keep = shared_from_this();  // (as in OnWritable)
    SendOrPark(std::move(msg));
    return;
  }
  InOrderOnLoop([self = shared_from_this(), m = std::make_shared<ChainBuffer>(std::move(msg))] {
    self->SendOrPark(std::move(*m));
  });
}

Status StreamCore::Write(ChainBuffer&& msg) {
  {
    std::unique_lock<fiber::Mutex> lock(mu_);
    cv_.wait(lock, [this] { return ended_ || (WriteRoomLocked() && write_waiters_.empty()); });
    if (Status st = WriteRefusalLocked(); !st.OK()) return st;
    queued_bytes_ += msg.size();
  }
  PostSend(std::move(msg));
  return kSuccStatus;
}

Future<> StreamCore::AsyncWrite(ChainBuffer&& msg) {
  Future<> waiting;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (Status st = WriteRefusalLocked(); !st.OK()) return MakeExceptionFuture<>(std::move(st));
    if (!WriteRoomLocked() || !write_waiters_.empty()) {
      write_waiters_.push_back(PendingWrite{std::move(msg), Promise<>()});
      return write_waiters_.back().done.GetFuture();
    }
    queued_bytes_ += msg.size();
  }
  PostSend(std::move(msg));
  return MakeReadyFuture<>();
}

void StreamCore::ServeWriteWaiters() {
  // SendOrPark below, and a continuation that writes again, come back here: the outer call
  // serves them all, without recursion.
  if (serving_writes_) return;
  serving_writes_ = true;
  for (;;) {
    std::optional<PendingWrite> w;
    Status refusal;
    {
      std::lock_guard<fiber::Mutex> lock(mu_);
      if (write_waiters_.empty()) break;
      refusal = WriteRefusalLocked();
      if (refusal.OK() && !WriteRoomLocked()) break;
      w.emplace(std::move(write_waiters_.front()));
      write_waiters_.pop_front();
      if (refusal.OK()) queued_bytes_ += w->msg.size();
    }
    if (!refusal.OK()) {
      w->done.SetException(std::move(refusal));
      continue;
    }
    SendOrPark(std::move(w->msg));  // (on the loop already)
    w->done.SetValue();
  }
  serving_writes_ = false;
}

void StreamCore::AddInitialMetadata(std::string key, std::string value) {
  std::lock_guard<fiber::Mutex> lock(mu_);
  initial_md_[std::move(key)] = std::move(value);
}

void StreamCore::SetTrailingMetadata(StreamMetadata md) {
  std::lock_guard<fiber::Mutex> lock(mu_);
  trailing_md_ = std::move(md);
}

void StreamCore::SendInitialMetadataOnce() {
  if (initial_sent_ || link_ == nullptr) return;
  initial_sent_ = true;
  StreamMetadata md;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    md.swap(initial_md_);
  }
  if (!md.empty()) link_->SetInitialMetadata(id_, std::move(md));
}

void StreamCore::FinishOnLink(const Status& status) {
  SendInitialMetadataOnce();
  StreamMetadata md;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    md.swap(trailing_md_);
  }
  if (!md.empty()) link_->SetTrailingMetadata(id_, std::move(md));
  link_->Finish(this, status);
}

void StreamCore::Finish(const Status& status) {
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  InOrderOnLoop([self = shared_from_this(), status] {
    if (self->link_ == nullptr) return;
    if (!self->parked_.empty()) {
      self->finish_pending_ = true;  // after what waits for window
      self->finish_status_ = status;
      return;
    }
    self->FinishOnLink(status);
  });
}

void StreamCore::Reset(const Status& status) {
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    finished_ = true;
  }
  InOrderOnLoop([self = shared_from_this(), status] {
    self->parked_.clear();
    self->finish_pending_ = false;
    if (self->link_ != nullptr) self->link_->Finish(self.get(), status);
  });
}

void StreamCore::Abandon(const Status& status) {
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    // (Ended both ways: by a reset or a lost connection, by our finish and the peer's end, or by
    // the peer's end with our writes closed.)
    if (ended_ || (remote_ended_ && (finished_ || writes_closed_))) return;
  }
  Reset(status);
}

void StreamCore::SendOrPark(ChainBuffer&& msg) {
  const size_t n = msg.size();
  bool parked = false;
  if (link_ != nullptr) {
    if (parked_.empty() && link_->CanSend(id_)) {
      std::string err;
      SendInitialMetadataOnce();
      MarkActive();
      if (!link_->SendMessage(id_, std::move(msg), &err)) {
        TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "stream {}: a message was not sent: {}", id_,
                          err);
      }
    } else {
      if (parked_.empty() && !flow_control_) link_->WatchBacklog(this);
      parked_.push_back(std::move(msg));
      parked = true;
    }
  }
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    queued_bytes_ -= n;
    if (parked) blocked_ = true;
  }
  cv_.notify_all();
  if (!parked) ServeWriteWaiters();
}

void StreamCore::OnWritable() {
  // A continuation run from here (a write or read that completes) may end the stream and drop
  // every other reference to it: this one lasts until the call returns.
  const std::shared_ptr<StreamCore> keep = shared_from_this();
  while (link_ != nullptr && !parked_.empty() && link_->CanSend(id_)) {
    ChainBuffer msg = std::move(parked_.front());
    parked_.pop_front();
    std::string err;
    SendInitialMetadataOnce();
    MarkActive();
    if (!link_->SendMessage(id_, std::move(msg), &err)) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "stream {}: a message was not sent: {}", id_, err);
    }
  }
  if (!parked_.empty()) {
    if (link_ != nullptr && !flow_control_) link_->WatchBacklog(this);
    return;
  }
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    blocked_ = false;
  }
  cv_.notify_all();
  ServeWriteWaiters();
  if (finish_pending_ && link_ != nullptr && parked_.empty()) {
    finish_pending_ = false;
    FinishOnLink(finish_status_);
  }
}

// ---- The loop's events ----------------------------------------------------------------------

void StreamCore::ArmTimeouts(int64_t idle_ms, int64_t total_ms, int32_t code) {
  if (idle_ms <= 0 && total_ms <= 0) return;
  const int64_t now = MonotonicNanos();
  timeout_code_ = code;
  last_active_ns_ = now;
  idle_ns_ = idle_ms > 0 ? idle_ms * kNanosPerMilli : 0;
  deadline_ns_ = total_ms > 0 ? now + total_ms * kNanosPerMilli : 0;
  int64_t at = deadline_ns_;
  if (idle_ns_ != 0 && (at == 0 || now + idle_ns_ < at)) at = now + idle_ns_;
  ArmLifeTimer(at);
}

void StreamCore::ArmLifeTimer(int64_t at_ns) {
  // A weak reference: a stream that ended otherwise is not kept alive by its timer.
  life_timer_ = conn_->reactor()->AddTimer(at_ns, [weak = weak_from_this()] {
    if (auto self = weak.lock()) {
      self->life_timer_ = 0;
      self->CheckTimeouts();
    }
  });
}

void StreamCore::CheckTimeouts() {
  if (link_ == nullptr) return;  // ended meanwhile
  const int64_t now = MonotonicNanos();
  std::string why;
  if (deadline_ns_ != 0 && now >= deadline_ns_) {
    why = "the stream's deadline passed";
  } else if (idle_ns_ != 0 && now - last_active_ns_ >= idle_ns_) {
    why = "no message came or went for " + std::to_string(idle_ns_ / kNanosPerMilli) + " ms";
  }
  if (why.empty()) {
    int64_t at = idle_ns_ != 0 ? last_active_ns_ + idle_ns_ : deadline_ns_;
    if (deadline_ns_ != 0 && deadline_ns_ < at) at = deadline_ns_;
    ArmLifeTimer(at);
    return;
  }
  const std::shared_ptr<StreamCore> keep = shared_from_this();
  parked_.clear();
  finish_pending_ = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    finished_ = true;
  }
  link_->Finish(this, Status(timeout_code_, std::move(why)));  // resets it; Detach follows
}

void StreamCore::OnMessage(ChainBuffer&& msg) {
  const std::shared_ptr<StreamCore> keep = shared_from_this();  // (as in OnWritable)
  MarkActive();
  bool over = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (remote_ended_) return;
    inbox_bytes_ += msg.size();
    if (count_unread_) conn_->AddStreamHeldBytes(static_cast<int64_t>(msg.size()));
    inbox_.push_back(std::move(msg));
    // With flow control the client cannot send past its window; without, what is unread is
    // bounded here instead.
    over = !flow_control_ && inbox_bytes_ > max_message_bytes_;
  }
  cv_.notify_all();
  ServeReadWaiter();
  if (over && link_ != nullptr) {
    Status st(codes_.too_much, "the peer sent more than " + std::to_string(max_message_bytes_) +
                                   " bytes the handler has not read (no flow control)");
    link_->Finish(this, st);  // resets the stream; Detach follows
  }
}

void StreamCore::OnRemoteEnd(const Status& status) {
  const std::shared_ptr<StreamCore> keep = shared_from_this();  // (as in OnWritable)
  if (!status.OK()) {
    Detach(status);
    return;
  }
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    remote_ended_ = true;
  }
  cv_.notify_all();
  ServeReadWaiter();
}

void StreamCore::OnPeerFinished(const Status& final) {
  const std::shared_ptr<StreamCore> keep = shared_from_this();  // (as in OnWritable)
  link_ = nullptr;
  parked_.clear();
  finish_pending_ = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    final_ = final;
    remote_ended_ = true;
    writes_closed_ = true;
    blocked_ = false;
  }
  cv_.notify_all();
  ServeReadWaiter();
  ServeWriteWaiters();
}

Status StreamCore::FinalStatus() {
  std::lock_guard<fiber::Mutex> lock(mu_);
  return final_;
}

void StreamCore::Detach(const Status& status) {
  const std::shared_ptr<StreamCore> keep = shared_from_this();  // (as in OnWritable)
  link_ = nullptr;
  if (life_timer_ != 0) {
    conn_->reactor()->CancelTimer(life_timer_);
    life_timer_ = 0;
  }
  parked_.clear();
  finish_pending_ = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    ended_ = true;
    remote_ended_ = true;
    if (end_status_.OK()) end_status_ = status;
    if (final_.OK()) final_ = status;
    inbox_.clear();
    if (count_unread_) conn_->AddStreamHeldBytes(-static_cast<int64_t>(inbox_bytes_));
    inbox_bytes_ = 0;
    blocked_ = false;
  }
  cv_.notify_all();
  ServeReadWaiter();
  ServeWriteWaiters();
  // Cut, not finished: what was started on the stream's behalf stops too.
  if (cancel_signal_ != nullptr && !status.OK() &&
      status.GetFrameworkRetCode() != codes_.write_end) {
    cancel_signal_->Cancel(status);
  }
}

}  // namespace trpc::detail
