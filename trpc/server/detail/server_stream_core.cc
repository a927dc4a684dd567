#include "trpc/server/detail/server_stream_core.h"

#include <chrono>
#include <mutex>
#include <string>
#include <utility>

#include "trpc/base/logging.h"

namespace trpc::detail {

Status ServerStreamCore::Read(ChainBuffer* msg, int64_t timeout_ms) {
  size_t report = 0;
  {
    std::unique_lock<fiber::Mutex> lock(mu_);
    auto ready = [this] { return !inbox_.empty() || remote_ended_; };
    if (timeout_ms < 0) {
      cv_.wait(lock, ready);
    } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
      return Status(kStreamServerReadTimeoutErr,
                    "no message came within " + std::to_string(timeout_ms) + " ms");
    }
    if (inbox_.empty()) {
      if (!end_status_.OK()) return end_status_;
      return Status(kStreamServerReadEnd, "end of the client's messages");
    }
    *msg = std::move(inbox_.front());
    inbox_.pop_front();
    inbox_bytes_ -= msg->size();
    if (flow_control_) {
      // Credit goes back no sooner than past a quarter of the window (the protocol's rule), so
      // the loop hears of it only then.
      unreported_ += msg->size();
      if (unreported_ * 4 > window_) {
        report = unreported_;
        unreported_ = 0;
      }
    }
  }
  if (report != 0) {
    conn_->reactor()->Post([self = shared_from_this(), report] {
      if (self->link_ != nullptr) self->link_->Consumed(self->id_, report);
    });
  }
  return kSuccStatus;
}

Status ServerStreamCore::Write(ChainBuffer&& msg) {
  const size_t n = msg.size();
  {
    std::unique_lock<fiber::Mutex> lock(mu_);
    cv_.wait(lock, [this] { return ended_ || (!blocked_ && queued_bytes_ < kMaxQueuedBytes); });
    if (ended_) {
      return end_status_.OK() ? Status(kStreamServerNetworkErr, "the stream has ended")
                              : end_status_;
    }
    if (finished_) return Status(kStreamServerWriteEnd, "the stream was finished");
    queued_bytes_ += n;
  }
  conn_->reactor()->Post(
      [self = shared_from_this(), m = std::make_shared<ChainBuffer>(std::move(msg))] {
        self->SendOrPark(std::move(*m));
      });
  return kSuccStatus;
}

void ServerStreamCore::Finish(const Status& status) {
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  conn_->reactor()->Post([self = shared_from_this(), status] {
    if (self->link_ == nullptr) return;
    if (!self->parked_.empty()) {
      self->finish_pending_ = true;  // after what waits for window
      self->finish_status_ = status;
      return;
    }
    self->link_->Finish(self.get(), status);
  });
}

void ServerStreamCore::SendOrPark(ChainBuffer&& msg) {
  const size_t n = msg.size();
  bool parked = false;
  if (link_ != nullptr) {
    if (parked_.empty() && link_->CanSend(id_)) {
      std::string err;
      if (!link_->SendMessage(id_, std::move(msg), &err)) {
        TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "stream {}: a message was not sent: {}", id_,
                          err);
      }
    } else {
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
}

void ServerStreamCore::OnWritable() {
  while (link_ != nullptr && !parked_.empty() && link_->CanSend(id_)) {
    ChainBuffer msg = std::move(parked_.front());
    parked_.pop_front();
    std::string err;
    if (!link_->SendMessage(id_, std::move(msg), &err)) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "stream {}: a message was not sent: {}", id_, err);
    }
  }
  if (!parked_.empty()) return;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    blocked_ = false;
  }
  cv_.notify_all();
  if (finish_pending_ && link_ != nullptr) {
    finish_pending_ = false;
    link_->Finish(this, finish_status_);
  }
}

void ServerStreamCore::OnMessage(ChainBuffer&& msg) {
  bool over = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    if (remote_ended_) return;
    inbox_bytes_ += msg.size();
    inbox_.push_back(std::move(msg));
    // With flow control the client cannot send past its window; without, what is unread is
    // bounded here instead.
    over = !flow_control_ && inbox_bytes_ > max_message_bytes_;
  }
  cv_.notify_all();
  if (over && link_ != nullptr) {
    Status st(kStreamServerMsgExceedLimitErr,
              "the client sent more than " + std::to_string(max_message_bytes_) +
                  " bytes the handler has not read (no flow control)");
    link_->Finish(this, st);  // resets the stream; Detach follows
  }
}

void ServerStreamCore::OnRemoteEnd(const Status& status) {
  if (status.OK()) {
    {
      std::lock_guard<fiber::Mutex> lock(mu_);
      remote_ended_ = true;
    }
    cv_.notify_all();
    return;
  }
  Detach(status);
}

void ServerStreamCore::Detach(const Status& status) {
  link_ = nullptr;
  parked_.clear();
  finish_pending_ = false;
  {
    std::lock_guard<fiber::Mutex> lock(mu_);
    ended_ = true;
    remote_ended_ = true;
    if (end_status_.OK()) end_status_ = status;
    inbox_.clear();
    inbox_bytes_ = 0;
    blocked_ = false;
  }
  cv_.notify_all();
}

}  // namespace trpc::detail
