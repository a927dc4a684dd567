#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/chain_buffer.h"
#include "trpc/base/net_address.h"
#include "trpc/base/tls_peer.h"
#include "trpc/reactor/event_handler.h"
#include "trpc/reactor/reactor.h"
#include "trpc/transport/buffer_budget.h"
#include "trpc/transport/detail/reply_sequencer.h"
#include "trpc/transport/frame_codec.h"
#include "trpc/transport/tls_context.h"

namespace trpc {

namespace detail {
class TlsChannel;
}

/// Byte totals that the connections of one reactor add their traffic to (an owner's per-reactor
/// counters, e.g. a service's, through ConnectionOptions::traffic).
///
/// Memory ordering: written only by that reactor's loop thread, as a relaxed load + store (no
/// read-modify-write: there is one writer); any thread may read them (relaxed), getting a
/// recent value that orders nothing else.
struct alignas(64) TrafficCounters {
  std::atomic<uint64_t> bytes_in{0};
  std::atomic<uint64_t> bytes_out{0};

  static void Add(std::atomic<uint64_t>& counter, uint64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

/// Per-connection limits. Every one has a default, a doc line (docs/config.md) and a test.
struct ConnectionOptions {
  /// Largest frame accepted; bigger ones close the connection (decided from the frame header).
  size_t max_packet_size = 10'000'000;
  /// When this many reply bytes wait to be written, the connection stops reading (and so stops
  /// producing replies) until the peer has taken half of them: a peer that stops reading cannot
  /// grow our memory without bound.
  size_t max_pending_write_bytes = 64u << 20;
  /// Requests handed up (BeginRequest) whose EndRequest has not come yet; at the limit the
  /// connection stops reading until one ends. Only asynchronous dispatch (the fiber model)
  /// ever has more than one.
  uint32_t max_pending_requests = 1024;
  /// Server side: stop reading while over max_pending_write_bytes. Client connections keep
  /// reading (replies are what frees their memory) and refuse new calls instead.
  bool pause_reading_when_backlogged = true;
  /// Close after this long without reading or writing a byte; 0 = never.
  int64_t idle_timeout_ms = 60'000;
  /// A connection that has not sent a byte this long after Start() is closed (kTimeout): a
  /// silent peer holds a connection slot for this long, not for idle_timeout_ms. Once a byte
  /// came, the frame timeouts below apply instead. 0 = no limit (idle_timeout_ms only).
  int64_t silent_timeout_ms = 0;
  /// A frame begun (bytes buffered that do not form a whole frame yet) must be complete this
  /// long after the read that began it, else the input ends and the connection closes
  /// gracefully with kTimeout; 0 = no limit. Protocol-neutral (HTTP's codec bounds the request
  /// head on its own, FrameCodecState::read_deadline_ns). Time while reading is paused (our
  /// backlog, not the peer's doing) does not count.
  int64_t frame_read_timeout_ms = 0;
  /// A graceful close (Shutdown/CloseAfterFlush) sends FIN once the queue is written, then keeps
  /// reading and discarding until the peer's FIN or this long, whichever comes first. Closing
  /// with unread input would make the kernel send a reset, which can destroy replies the peer
  /// has not read yet.
  int64_t linger_ms = 2'000;
  /// Optional: counters every byte read and written is also added to. Must belong to the
  /// connection's reactor (one writer) and outlive the connection.
  TrafficCounters* traffic = nullptr;
  /// Optional: the slot (of this connection's reactor) of the process-wide bound on buffered
  /// bytes (BufferBudget) that this connection's input and output count against. Must outlive
  /// the connection. Server connections only: they pause reading when over their share.
  BufferBudget::Slot* budget = nullptr;
  /// Optional: a gauge of open connections, incremented when the connection is made
  /// (connecting included) and decremented once when it closes. Must outlive the connection.
  std::atomic<int64_t>* open_gauge = nullptr;
  /// Optional: speak TLS with this context (its role says which side starts). The handshake
  /// runs first, bounded by the context's handshake_timeout; a client connection reports
  /// OnConnected only once it is done, and nothing is read or written in plaintext.
  std::shared_ptr<TlsContext> tls;
  /// Client side, with `tls`: the target's host name or IP, for SNI and the certificate check.
  std::string tls_host;
  /// Server side, without `tls`: a peer whose first bytes are a TLS handshake is told apart
  /// from one sending garbage (logged as such, counted, closed).
  bool detect_tls = false;
};

/// Byte counters of one connection (loop thread writes, readers tolerate staleness).
struct ConnectionStats {
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

/// Why a connection closed, for its owner's statistics (the text reason is for logs).
enum class CloseCause : uint8_t {
  kLocal,          // its owner closed it (stop, shutdown, a short call done)
  kPeerClosed,     // the peer's FIN, or the protocol's own "close" (HTTP Connection: close)
  kTimeout,        // idle_time, or a frame that stayed incomplete too long
  kIoError,        // a failed read, write, connect or epoll registration
  kProtocolError,  // bytes the codec could not accept
  kOverLimit,      // held more than its share of the process's buffer bound for too long
};

/// One TCP connection owned by one reactor: reads until EAGAIN into a chain buffer, splits frames
/// through a FrameCodec, hands the frames of a read batch to its Handler, and flushes everything
/// the handler queued with one sendmsg() (an iovec write) per batch. A write that would block is
/// finished on EPOLLOUT (registered edge-triggered once, so no epoll_ctl per write).
///
/// Ownership: held by shared_ptr (the owner keeps one); the connection keeps itself alive while
/// it handles an event. Thread contract: every method is loop-thread only.
class Connection : public EventHandler,
                   public BudgetedConnection,
                   public std::enable_shared_from_this<Connection> {
 public:
  class Handler {
   public:
    virtual ~Handler() = default;
    /// One frame, in arrival order. May Send() and Close(). Frames are handed over one at a
    /// time so the write-queue limit is checked between them.
    virtual void OnFrame(Connection* conn, ChainBuffer&& frame) = 0;
    /// After the last frame of a read batch, before the batch's replies are flushed.
    virtual void OnBatchEnd(Connection* conn) { (void)conn; }
    /// An outgoing connection finished connecting.
    virtual void OnConnected(Connection* conn) { (void)conn; }
    /// Called once, after the fd is closed. `reason` is for logs.
    virtual void OnClose(Connection* conn, const std::string& reason) = 0;
  };

  /// `fd` is connected (server side) or connecting (client side, `connecting` = true).
  Connection(Reactor* reactor, int fd, const NetAddress& peer, FrameCodec* codec, Handler* handler,
             const ConnectionOptions& options, bool connecting = false);
  ~Connection() override;

  /// Registers with the reactor and arms the idle timer.
  void Start();
  /// Queues bytes for the peer. Inside a read batch they go out with the batch's flush; outside
  /// one they are flushed now.
  void Send(ChainBuffer&& data);
  /// Send() for replies: outside a read batch (a reply from a fiber or a continuation) the write
  /// is left to a loop task posted now, so every reply queued before the loop gets to it leaves
  /// in the same sendmsg (16 pipelined requests answered by 16 fibers: one syscall, not 16).
  void SendSoon(ChainBuffer&& data);
  /// For bytes in their wire form already (a stream session's frames): queued as they are,
  /// never through the session's EncodeOutput (FrameCodecState::session()); written as by
  /// Send() when `now`, else as by SendSoon().
  void SendWire(ChainBuffer&& data, bool now = false);
  /// Stream messages this connection brought that their readers have not read yet (the stream
  /// cores count them, from any thread): held like the connection's own buffers, so they count
  /// against the process's buffer bound (ConnectionOptions::budget) with them.
  void AddStreamHeldBytes(int64_t delta) {
    stream_held_bytes_.fetch_add(delta, std::memory_order_relaxed);
  }
  size_t stream_held_bytes() const { return StreamHeldBytes(); }
  /// The reply slot of the frame being handed to Handler::OnFrame (valid during that call): 0
  /// for protocols whose replies carry request ids, else a sequence number the reply must be
  /// sent with (FrameCodec::OrderedReplies()).
  uint64_t frame_slot() const { return frame_slot_; }
  /// SendSoon() for the reply of the frame that had `slot`: with ordered replies it waits until
  /// every earlier frame's reply has gone out. A request that gets no reply must still fill
  /// its slot, with an empty buffer. `ends_request`: the request was counted by BeginRequest()
  /// and this ends it (as EndRequest()); when it was the last one pending, the queued replies
  /// are written now instead of by a posted flush.
  void SendReply(uint64_t slot, ChainBuffer&& data, bool ends_request);
  /// Client side, protocols that encode output per connection (FrameCodecState::session()):
  /// tells the peer that the call `request_id` was given up.
  void CancelOutgoing(uint32_t request_id);
  /// Closes the fd and tells the handler; idempotent. `cause` is what close_cause() reports.
  void Close(const std::string& reason, CloseCause cause = CloseCause::kLocal);
  /// Graceful close: once every queued byte has been written and no request is pending, sends FIN,
  /// then closes at the peer's FIN or after linger_ms (see ConnectionOptions::linger_ms). Frames
  /// that arrive in the meantime are still handed up (their replies are dropped if the write side
  /// is shut).
  void CloseAfterFlush(const std::string& reason, CloseCause cause = CloseCause::kLocal);
  /// Request accounting for asynchronous handlers (loop thread): the handler calls
  /// BeginRequest() for a frame it hands to another fiber/thread, and EndRequest() once that
  /// request's reply is queued (or it has none). Reading pauses at max_pending_requests.
  void BeginRequest() { ++pending_requests_; }
  void EndRequest() { SendReply(0, ChainBuffer(), /*ends_request=*/true); }
  uint32_t pending_requests() const { return pending_requests_; }
  /// Hands up no more frames (input is read and discarded) but stays open for replies still to
  /// come; Shutdown() or Close() later.
  void StopReading();
  /// Graceful close that hands up nothing more: frames not yet handed over are dropped and later
  /// input is read and discarded; what is queued is written, then as CloseAfterFlush.
  void Shutdown(const std::string& reason);

  /// For an owner that took the connection over while its loop thread is held outside every
  /// connection (a server's bounded stop taking over a worker stuck in a handler): the caller
  /// has the connection to itself and must touch no reactor state. Queues `data` in `slot`'s
  /// order (ends a counted request when `ends_request`) without writing.
  void QueueReplyWhileLoopHeld(uint64_t slot, ChainBuffer&& data, bool ends_request);
  /// ... then writes what the socket takes without blocking and shuts it down both ways: the
  /// peer reads the replies, then EOF. The connection stays open (no fd is closed under the
  /// loop); its loop closes it when it runs again.
  void FlushAndShutdownWhileLoopHeld();

  bool closed() const { return state_ == State::kClosed; }
  bool connecting() const {
    return state_ == State::kConnecting || state_ == State::kConnectingToClose;
  }
  bool reading_paused() const { return reading_paused_; }
  size_t pending_write_bytes() const { return OutBytes(); }
  const NetAddress& peer() const { return peer_; }
  Reactor* reactor() const { return reactor_; }
  int fd() const { return fd_; }
  const ConnectionStats& stats() const { return stats_; }
  /// Loop time of the last byte read or written (or of Start()).
  int64_t last_active_ns() const { return last_active_ns_; }
  /// The codec's per-connection state (FrameCodec::NewConnectionState), or null.
  FrameCodecState* codec_state() const { return codec_state_.get(); }
  /// The peer's FIN was read: no more input comes.
  bool peer_closed() const { return peer_closed_; }
  /// With TLS, once its handshake is done: the peer's certificate and what was agreed; else
  /// null. Shared, so a call may keep it after the connection is gone.
  const std::shared_ptr<const TlsPeer>& tls_peer() const;
  /// A TLS handshake is in progress (nothing is handed up or written in plaintext until done).
  bool tls_handshaking() const { return handshaking_; }

  /// Fires when the connection closes (any cause, with the reason), or earlier at the peer's
  /// FIN where a FIN means the caller is gone (FrameCodec::PeerMayHalfClose), for work done on
  /// behalf of its requests: a server call's downstream calls subscribe to it through their context
  /// (ServerContext::GetCancelSignal). Made on first use, from any thread; asked after the
  /// close, it has fired already.
  std::shared_ptr<CancelSignal> CloseSignal();

  /// Why the connection closed (or is closing): why its close began, kept when a later event
  /// (an error while flushing, the peer's FIN) finishes it. Valid in Handler::OnClose, whose
  /// text reason is for people; this is for counting.
  CloseCause close_cause() const { return close_cause_; }

  /// The process-wide buffer bound (ConnectionOptions::budget): the bytes this connection last
  /// reported to it, whether it stopped reading for it, and the slot's call to read again.
  size_t budget_bytes() const { return budget_bytes_; }
  bool budget_paused() const { return budget_paused_; }
  // BudgetedConnection.
  bool PausedByBudget() const override { return budget_paused_ && !closed(); }
  size_t BudgetBytes() const override { return budget_bytes_; }
  void ResumeAfterBudget() override;
  void AbortOverBudget(const std::string& why) override;
  std::string PeerName() const override { return peer_.ToString(); }

  void HandleEvents(uint32_t events) override;

 private:
  // Lifecycle: where the connection is between connect and close.
  //
  //   kConnecting          client side: connect() in progress; nothing is read or written yet
  //   kConnectingToClose   kConnecting after CloseAfterFlush()/Shutdown(): closes gracefully once
  //                        connected (a short connection's one-way call)
  //   kOpen                reads, hands frames up, writes
  //   kClosingAfterFlush   CloseAfterFlush()/Shutdown() (or the peer's FIN, or the protocol's end
  //                        of input): writes what is queued and waits for the pending requests
  //   kLingering           FIN sent (SHUT_WR): reads and discards until the peer's FIN or
  //                        linger_ms; nothing more is queued or written
  //   kClosed              fd closed, handler told; final
  //
  // Allowed transitions (Transition() asserts them; Close() is allowed from every state but
  // kClosed, and a CloseAfterFlush() in a state that already closes only renews the reason):
  //
  //   kConnecting         -> kOpen                (connected)
  //   kConnecting         -> kConnectingToClose   (CloseAfterFlush)
  //   kConnectingToClose  -> kClosingAfterFlush   (connected)
  //   kOpen               -> kClosingAfterFlush   (CloseAfterFlush)
  //   kClosingAfterFlush  -> kLingering           (queue written, no request pending, FIN sent)
  //   any but kClosed     -> kClosed              (Close: error, idle, peer's FIN, linger over)
  //
  // The input side is kept apart: draining_ (StopReading/Shutdown), input_finished_ (the protocol
  // ended the input) and peer_closed_ (EOF) only ever turn on, independently of the state and of
  // each other (StopReading() does not close, a close-after-flush still hands frames up, the peer
  // may send FIN at any time), except that kLingering always has draining_.
  enum class State : uint8_t {
    kConnecting,
    kConnectingToClose,
    kOpen,
    kClosingAfterFlush,
    kLingering,
    kClosed,
  };
  static bool TransitionAllowed(State from, State to);
  void Transition(State next);
  // A graceful close is under way (CloseAfterFlush() came and the fd is not closed yet).
  bool closing_after_flush() const {
    return state_ == State::kConnectingToClose || state_ == State::kClosingAfterFlush ||
           state_ == State::kLingering;
  }
  // Bytes may still be queued for the peer.
  bool accepts_output() const { return state_ != State::kLingering && state_ != State::kClosed; }
  // Queued bytes may be written now.
  bool writable() const { return state_ == State::kOpen || state_ == State::kClosingAfterFlush; }

  // TLS: advances the handshake; true once it is done with the connection still open.
  bool ContinueHandshake();
  void OnHandshakeTimer();
  // Sends what `src` holds until it is empty (kDrained) or the socket is full (kBlocked);
  // kClosed after a write error (the connection is closed then).
  enum class WriteResult : uint8_t { kDrained, kBlocked, kClosed };
  WriteResult WriteFrom(ChainBuffer* src);
  // Bytes queued for the peer: plaintext not yet written, and TLS records not yet sent.
  size_t OutBytes() const;
  bool HasOutput() const { return OutBytes() != 0; }
  // A server's first bytes on a plaintext port: a TLS handshake is named and refused.
  bool RefuseTlsOnPlaintext(const char* data, size_t n);
  void HandleRead(bool to_eof);
  void ProcessInput();
  void DeliverFrames();
  void Flush();
  void ArmIdleTimer(int64_t deadline_ns);
  void OnIdleTimer();
  void BeginLinger();
  bool Backlogged() const {
    return OutBytes() > options_.max_pending_write_bytes ||
           pending_requests_ >= options_.max_pending_requests;
  }
  // Backlogged(), or the output grew by BufferBudget::kStep since the last report to the budget
  // and the budget now says stop: write_limit_ is the lower of max_pending_write_bytes and the
  // next report's point, so the per-frame check costs what it did without a budget.
  bool ShouldPause() {
    return OutBytes() > write_limit_ || pending_requests_ >= options_.max_pending_requests
               ? PauseCheck()
               : false;
  }
  bool PauseCheck();
  // Reports the bytes buffered to the budget if they changed since the last report (cheap when
  // they did not: request/response traffic ends each event with nothing buffered). Frames held
  // back are counted by the slow path only: while there are some, the sum here falls short of
  // the last report, so it runs.
  void AccountBuffered() {
    if (options_.budget != nullptr && in_.size() + OutBytes() + TlsLibraryBytes() +
                                              (session_ != nullptr ? session_->held_bytes : 0) +
                                              StreamHeldBytes() !=
                                          budget_bytes_) {
      AccountBufferedSlow();
    }
  }
  void AccountBufferedSlow();
  // Over the budget's bound: reports, then the bytes this connection may still read before its
  // allowance is used up (0: it paused; SIZE_MAX: the bound is no longer reached).
  size_t BudgetRoom();
  void ResumeReadingSoon();
  void SendImmediate(uint64_t slot, bool final);
  // Appends `data` to out_ (in `slot`'s order): false when nothing was appended.
  bool QueueReply(uint64_t slot, ChainBuffer&& data);
  bool Queue(ChainBuffer&& data);
  // Posts the loop task that flushes out_, unless one is posted or a read batch will flush.
  void PostFlush();
  void ArmReadTimer(int64_t deadline_ns);
  void OnReadTimer();
  // When a connection that has sent nothing yet closes (silent_timeout_ms); 0 = none.
  int64_t SilentDeadline() const;
  // After a split that left bytes in in_, with frame_read_timeout_ms: times that partial frame.
  void NoteFrameProgress(bool frames_cut);
  void FinishInput();

  Reactor* reactor_;
  int fd_;
  NetAddress peer_;
  FrameCodec* codec_;
  std::unique_ptr<FrameCodecState> codec_state_;  // null for stateless protocols
  CallSession* session_;                          // codec_state_->session(), or null
  Handler* handler_;
  ConnectionOptions options_;
  ChainBuffer in_;
  ChainBuffer out_;
  std::vector<ChainBuffer> frames_;  // cut but not yet handed to the handler
  size_t next_frame_ = 0;            // frames_[next_frame_..] are still to deliver
  ConnectionStats stats_;
  int64_t last_active_ns_ = 0;
  int64_t started_ns_ = 0;  // Start()'s time
  TimerId idle_timer_ = 0;
  TimerId linger_timer_ = 0;
  TimerId read_timer_ = 0;
  TimerId handshake_timer_ = 0;
  std::unique_ptr<detail::TlsChannel> tls_;  // with ConnectionOptions::tls
  bool handshaking_ = false;            // TLS: the TCP connection is up, the handshake is not done
  bool handshake_counted_ = false;      // in this worker's handshakes in progress (max_handshakes)
  bool handshake_step_queued_ = false;  // a server handshake step waits as background work
  bool handshake_began_ = false;        // a handshake step has run (OpenSSL holds buffers)
  uint32_t handshake_events_ = 0;       // the epoll events seen while it waits
  void UncountHandshake();
  // TLS: OpenSSL's record buffers are released after kTlsIdleReleaseNs without traffic (a lazy
  // timer, as the idle timer), and the timer is armed again by the next traffic.
  TimerId tls_idle_timer_ = 0;
  bool tls_buffers_released_ = true;  // (no timer armed; the handshake's end arms it)
  void ArmTlsIdleTimer(int64_t deadline_ns);
  void OnTlsIdleTimer();
  void NoteTlsTraffic() {
    if (tls_buffers_released_) [[unlikely]] {
      tls_buffers_released_ = false;
      ArmTlsIdleTimer(last_active_ns_ + kTlsIdleReleaseNs);
    }
  }
  static constexpr int64_t kTlsIdleReleaseNs = 1'000'000'000;
  // OpenSSL's read and write record buffers and handshake state while a TLS connection holds
  // them (from its handshake's first step until it has been idle kTlsIdleReleaseNs after the
  // handshake): counted against the buffer bound like the connection's own buffers, as an
  // estimate (about 2 x 17 KiB). A connection that has sent nothing yet holds none.
  static constexpr size_t kTlsLibraryBytes = 34u << 10;
  size_t TlsLibraryBytes() const {
    return tls_ != nullptr && ((handshaking_ && handshake_began_) || !tls_buffers_released_)
               ? kTlsLibraryBytes
               : 0;
  }
  int64_t read_timer_at_ = 0;
  // LoopTimeNs() of the read that began the partial frame at the front of in_; 0 = none (or
  // frame_read_timeout_ms is 0).
  int64_t frame_started_ns_ = 0;
  detail::ReplySequencer sequencer_;  // used when ordered_
  uint64_t frame_slot_ = 0;
  uint32_t pending_requests_ = 0;
  State state_;
  bool ordered_;
  // Input side (see State): each only ever turns on.
  // The input ended by the protocol (a bad frame with an error answer, a read timeout, or the
  // peer's "close after this"): frames already cut are still handed up, then the connection
  // closes gracefully with `finish_reason_`.
  bool input_finished_ = false;
  std::string finish_reason_;
  bool draining_ = false;     // StopReading()/Shutdown(), kLingering: input is read and discarded
  size_t discarded_ = 0;      // bytes read while draining_ (kMaxDiscardBytes)
  bool peer_closed_ = false;  // the peer's FIN was read: no more input comes
  // Independent flags.
  bool in_batch_ = false;
  bool flush_posted_ = false;  // a loop task will flush out_
  bool reading_paused_ = false;
  bool small_reads_ = true;  // the last read did not fill its first block: read(2), not readv
  // The process-wide buffer bound (options_.budget): bytes last reported, the output size at
  // which the next report is due, and reading paused by the budget (with reading_paused_).
  bool budget_paused_ = false;
  size_t budget_bytes_ = 0;
  // Fires CloseSignal() and the codec state's per-call signals (loop thread): at the close, and
  // at the peer's FIN where that ends the calls (FrameCodec::PeerMayHalfClose).
  void FireCloseSignals(const std::string& why);
  // CloseSignal(): made by whichever thread asks first (CAS), owned here. Close() sets
  // signal_closed_ then reads close_signal_; CloseSignal() installs, then reads
  // signal_closed_. Both seq_cst, so at least one of them sees the other and fires it.
  std::atomic<std::shared_ptr<CancelSignal>*> close_signal_{nullptr};
  std::atomic<bool> signal_closed_{false};
  // AddStreamHeldBytes(); relaxed: a count, read by the loop when it reports to the budget.
  std::atomic<int64_t> stream_held_bytes_{0};
  size_t StreamHeldBytes() const {
    const int64_t n = stream_held_bytes_.load(std::memory_order_relaxed);
    return n > 0 ? static_cast<size_t>(n) : 0;
  }
  size_t write_limit_;
  CloseCause close_cause_ = CloseCause::kLocal;   // with close_reason_
  CloseCause finish_cause_ = CloseCause::kLocal;  // with finish_reason_
  std::string close_reason_;  // for the handler's OnClose once a graceful close ends
};

using ConnectionPtr = std::shared_ptr<Connection>;

}  // namespace trpc
