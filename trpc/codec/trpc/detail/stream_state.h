#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trpc::detail {

/// One trpc stream's order and flow control, as one end sees it (docs/protocol.md, section 6).
/// Pure bookkeeping: it sends and receives nothing. The connection's stream code tells it what
/// it is about to send and what arrived, and a false (with `*err`) means the peer broke the
/// protocol (or, for a send, that our own code tried to) and the stream must be reset.
///
/// The rules, as tRPC-Go and tRPC-Cpp apply them:
/// - The client sends INIT first; the server answers with its INIT. No DATA, FEEDBACK or CLOSE
///   reaches a server before the client's INIT, and a client sends DATA only once the server's
///   INIT has come (a server's INIT carrying an error ends the stream).
/// - Each INIT announces the window its sender reads with; a value below 65535 is raised to
///   65535. Flow control runs only when both INITs carry a non-zero window.
/// - A writer may send while its window (the peer's announced window, less the DATA bytes
///   sent, plus the FEEDBACK increments received) is above 0, so it goes negative by at most
///   one message. DATA that arrives while the sender's window, as we count it, is not above 0
///   is a violation.
/// - A reader returns credit with FEEDBACK once it has consumed more than a quarter of its
///   window since its last FEEDBACK. A FEEDBACK that would take the window past 2^31 - 1 is a
///   violation.
/// - CLOSE with close_type 0 ends one direction (a half-close); close_type 1 (reset) ends both.
///   Nothing may follow a side's CLOSE from that side.
///
/// Thread contract: none of its own; the stream's owner serialises the calls.
class TrpcStreamState {
 public:
  enum class Role { kClient, kServer };

  explicit TrpcStreamState(Role role) : role_(role) {}

  /// The INIT this end sends, announcing `window` (0: we do not flow-control what we read).
  bool OnSendInit(uint32_t window, std::string* err);
  /// The peer's INIT; `ret` is its response meta's code (a server's refusal ends the stream).
  bool OnRecvInit(uint32_t window, int32_t ret, std::string* err);

  /// True when DATA may be sent now: the stream is open both ways for our messages and the
  /// window, if flow control runs, is above 0.
  bool CanSend() const;
  /// A DATA body of `n` bytes about to be sent. False if it must not be (see CanSend()).
  bool OnSendData(size_t n, std::string* err);
  /// A DATA body of `n` bytes arrived.
  bool OnRecvData(size_t n, std::string* err);
  /// The reader consumed `n` bytes of DATA bodies. Returns the FEEDBACK increment to send now,
  /// or 0 when none is due (or flow control is off).
  uint32_t OnConsumed(size_t n);
  /// A FEEDBACK arrived.
  bool OnRecvFeedback(uint32_t increment, std::string* err);

  /// A CLOSE about to be sent (`reset`: close_type 1).
  bool OnSendClose(bool reset, std::string* err);
  /// A CLOSE arrived.
  bool OnRecvClose(bool reset, std::string* err);

  bool flow_control() const { return flow_control_; }
  /// Bytes we may still send before blocking (meaningful when flow_control()).
  int64_t send_window() const { return send_window_; }
  /// Both directions have ended (closed or reset): the stream can be forgotten.
  bool finished() const { return local_closed_ && remote_closed_; }
  bool local_closed() const { return local_closed_; }
  bool remote_closed() const { return remote_closed_; }
  bool was_reset() const { return reset_; }

  static constexpr uint32_t kMinWindow = 65535;
  static constexpr int64_t kMaxWindow = INT32_MAX;

 private:
  bool Opened() const { return init_sent_ && init_received_; }
  void Settle();  // both INITs known: decide flow control

  Role role_;
  bool init_sent_ = false;
  bool init_received_ = false;
  bool local_closed_ = false;
  bool remote_closed_ = false;
  bool reset_ = false;
  bool flow_control_ = false;
  uint32_t our_window_ = 0;   // as announced (after raising); 0 = not given
  uint32_t peer_window_ = 0;  // the same, of the peer
  int64_t send_window_ = 0;   // what we may send
  int64_t recv_window_ = 0;   // what the peer may send, as we count it
  uint64_t consumed_unacked_ = 0;  // consumed since our last FEEDBACK
};

}  // namespace trpc::detail
