// Connection's timers: the idle timer, and the read timer that bounds a partial frame (the
// protocol's deadline, frame_read_timeout_ms, silent_timeout_ms). The rest of the connection is
// in connection.cc.

#include "trpc/base/clock.h"
#include "trpc/transport/connection.h"
#include "trpc/transport/detail/tls_channel.h"

namespace trpc {

int64_t Connection::SilentDeadline() const {
  // Start() set last_active_ns_; the first byte read moves it, and from then on it is no
  // longer the start.
  if (options_.silent_timeout_ms <= 0 || stats_.bytes_in > 0) return 0;
  return started_ns_ + options_.silent_timeout_ms * kNanosPerMilli;
}

void Connection::ArmIdleTimer(int64_t deadline_ns) {
  std::weak_ptr<Connection> weak = weak_from_this();
  idle_timer_ = reactor_->AddTimer(deadline_ns, [weak] {
    if (auto self = weak.lock()) self->OnIdleTimer();
  });
}

void Connection::OnIdleTimer() {
  idle_timer_ = 0;
  if (closed()) return;
  // Activity only moves last_active_ns_ forward; the timer re-arms lazily from it, so reads and
  // writes never touch the timer heap.
  int64_t deadline = last_active_ns_ + options_.idle_timeout_ms * kNanosPerMilli;
  if (reactor_->LoopTimeNs() >= deadline) {
    Close("idle timeout", CloseCause::kTimeout);
  } else {
    ArmIdleTimer(deadline);
  }
}

void Connection::ArmTlsIdleTimer(int64_t deadline_ns) {
  std::weak_ptr<Connection> weak = weak_from_this();
  tls_idle_timer_ = reactor_->AddTimer(deadline_ns, [weak] {
    if (auto self = weak.lock()) self->OnTlsIdleTimer();
  });
}

void Connection::OnTlsIdleTimer() {
  tls_idle_timer_ = 0;
  if (closed()) return;
  const int64_t deadline = last_active_ns_ + kTlsIdleReleaseNs;
  if (reactor_->LoopTimeNs() < deadline) {
    ArmTlsIdleTimer(deadline);
    return;
  }
  if (!tls_->ReleaseBuffers()) {
    ArmTlsIdleTimer(reactor_->LoopTimeNs() + kTlsIdleReleaseNs);  // a partial record: later
    return;
  }
  TlsCounters::Get().idle_releases.fetch_add(1, std::memory_order_relaxed);
  tls_buffers_released_ = true;  // the next traffic arms the timer again
  AccountBuffered();             // (they no longer count against the buffer bound)
}

void Connection::ArmReadTimer(int64_t deadline_ns) {
  // One timer, re-armed lazily (as the idle timer): a later deadline just moves the check.
  if (read_timer_ != 0 && read_timer_at_ <= deadline_ns) return;
  if (read_timer_ != 0) reactor_->CancelTimer(read_timer_);
  read_timer_at_ = deadline_ns;
  std::weak_ptr<Connection> weak = weak_from_this();
  read_timer_ = reactor_->AddTimer(deadline_ns, [weak] {
    if (auto self = weak.lock()) self->OnReadTimer();
  });
}

void Connection::NoteFrameProgress(bool frames_cut) {
  // The bytes left over begin a frame: a new one if frames were cut off before them, else the
  // one already timed. The timer is lazy, as the idle timer: one already pending for an
  // earlier deadline (an earlier frame's) is kept and re-arms itself when it fires, so reads
  // that leave partial frames cost no timer operation each.
  if (frame_started_ns_ == 0 || frames_cut) frame_started_ns_ = reactor_->LoopTimeNs();
  ArmReadTimer(frame_started_ns_ + options_.frame_read_timeout_ms * kNanosPerMilli);
}

void Connection::OnReadTimer() {
  read_timer_ = 0;
  if (closed() || input_finished_ || draining_) return;
  const int64_t now = reactor_->LoopTimeNs();
  if (frame_started_ns_ != 0 && reading_paused_) {
    // We stopped reading (our backlog), so the frame cannot complete: not the peer's delay.
    // Check again later; ResumeReadingSoon() restarts its time.
    frame_started_ns_ = now;
  }
  const int64_t silent_deadline = SilentDeadline();
  if (silent_deadline != 0 && now >= silent_deadline) {
    Close("silent: no byte within silent_timeout_ms of the connect", CloseCause::kTimeout);
    return;
  }
  int64_t codec_deadline = codec_state_ != nullptr ? codec_state_->ReadDeadline() : 0;
  int64_t frame_deadline = frame_started_ns_ != 0
                               ? frame_started_ns_ + options_.frame_read_timeout_ms * kNanosPerMilli
                               : 0;
  const bool codec_due = codec_deadline != 0 && now >= codec_deadline;
  if (!codec_due && (frame_deadline == 0 || now < frame_deadline)) {
    // Nothing due (a frame completed in time, or a later one runs): wait for the earliest.
    int64_t next = 0;
    for (int64_t d : {codec_deadline, frame_deadline, silent_deadline}) {
      if (d != 0 && (next == 0 || d < next)) next = d;
    }
    if (next != 0) ArmReadTimer(next);
    return;
  }
  if (codec_due) codec_state_->OnReadTimeout();  // the protocol's answer (HTTP's 408)
  input_finished_ = true;
  finish_reason_ = "read timeout: a frame stayed incomplete too long";
  finish_cause_ = CloseCause::kTimeout;
  in_.Clear();
  if (next_frame_ == frames_.size()) FinishInput();
}

}  // namespace trpc
