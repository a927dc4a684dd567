#include "trpc/codec/trpc/detail/stream_state.h"

#include <fmt/format.h>

#include <algorithm>

namespace trpc::detail {

namespace {

uint32_t Raised(uint32_t window) {
  return window == 0 ? 0 : std::max(window, TrpcStreamState::kMinWindow);
}

}  // namespace

void TrpcStreamState::Settle() {
  flow_control_ = our_window_ != 0 && peer_window_ != 0;
  send_window_ = peer_window_;
  recv_window_ = our_window_;
}

bool TrpcStreamState::OnSendInit(uint32_t window, std::string* err) {
  if (init_sent_) {
    *err = "INIT sent twice";
    return false;
  }
  if (role_ == Role::kServer && !init_received_) {
    *err = "a server's INIT before the client's";
    return false;
  }
  if (local_closed_) {
    *err = "INIT after this side's CLOSE";
    return false;
  }
  init_sent_ = true;
  our_window_ = Raised(window);
  if (Opened()) Settle();
  return true;
}

bool TrpcStreamState::OnRecvInit(uint32_t window, int32_t ret, std::string* err) {
  if (init_received_) {
    *err = "a second INIT on the stream";
    return false;
  }
  if (role_ == Role::kClient && !init_sent_) {
    *err = "an INIT from the server before ours";
    return false;
  }
  init_received_ = true;
  peer_window_ = Raised(window);
  if (Opened()) Settle();
  if (role_ == Role::kClient && ret != 0) {
    // The server refused the stream: nothing more comes, and nothing may be sent.
    local_closed_ = remote_closed_ = reset_ = true;
  }
  return true;
}

bool TrpcStreamState::CanSend() const {
  return Opened() && !local_closed_ && (!flow_control_ || send_window_ > 0);
}

bool TrpcStreamState::OnSendData(size_t n, std::string* err) {
  if (!Opened()) {
    *err = "DATA before the stream is open (both INITs)";
    return false;
  }
  if (local_closed_) {
    *err = "DATA after this side's CLOSE";
    return false;
  }
  if (flow_control_) {
    if (send_window_ <= 0) {
      *err = "DATA with no window left (wait for FEEDBACK)";
      return false;
    }
    send_window_ -= static_cast<int64_t>(n);
  }
  return true;
}

bool TrpcStreamState::OnRecvData(size_t n, std::string* err) {
  if (!init_received_) {
    *err = "DATA before INIT";
    return false;
  }
  if (remote_closed_) {
    *err = "DATA after the peer's CLOSE";
    return false;
  }
  if (flow_control_) {
    if (recv_window_ <= 0) {
      *err = fmt::format("DATA of {} bytes while the peer's window was {} (flow control)", n,
                         recv_window_);
      return false;
    }
    recv_window_ -= static_cast<int64_t>(n);
  }
  return true;
}

uint32_t TrpcStreamState::OnConsumed(size_t n) {
  if (!flow_control_) return 0;
  consumed_unacked_ += n;
  if (consumed_unacked_ <= our_window_ / 4) return 0;
  // Credit what was consumed, never more than a window at once.
  const uint32_t increment =
      static_cast<uint32_t>(std::min<uint64_t>(consumed_unacked_, our_window_));
  consumed_unacked_ -= increment;
  recv_window_ += increment;
  return increment;
}

bool TrpcStreamState::OnRecvFeedback(uint32_t increment, std::string* err) {
  if (!init_received_) {
    *err = "FEEDBACK before INIT";
    return false;
  }
  if (!flow_control_) return true;  // nothing to credit (tRPC-Go ignores it too)
  if (increment == 0) {
    *err = "FEEDBACK with a zero increment";
    return false;
  }
  if (send_window_ + increment > kMaxWindow) {
    *err = fmt::format("FEEDBACK of {} takes the window from {} past 2^31 - 1", increment,
                       send_window_);
    return false;
  }
  send_window_ += increment;
  return true;
}

bool TrpcStreamState::OnSendClose(bool reset, std::string* err) {
  if (local_closed_ && !reset) {
    *err = "CLOSE sent twice";
    return false;
  }
  if (!init_sent_ && role_ == Role::kClient && !reset) {
    *err = "CLOSE before INIT";
    return false;
  }
  local_closed_ = true;
  if (reset) remote_closed_ = reset_ = true;
  return true;
}

bool TrpcStreamState::OnRecvClose(bool reset, std::string* err) {
  if (!init_received_ && !reset) {
    *err = "CLOSE before INIT";
    return false;
  }
  if (remote_closed_ && !reset_) {
    *err = "a second CLOSE from the peer";
    return false;
  }
  remote_closed_ = true;
  if (reset) local_closed_ = reset_ = true;
  return true;
}

}  // namespace trpc::detail
