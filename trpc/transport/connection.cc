#include "trpc/transport/connection.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/transport/detail/peer_log.h"
#include "trpc/transport/detail/tls_channel.h"
#include "trpc/transport/socket.h"

namespace trpc {

namespace {
// Split and dispatch once this much input is buffered even if the socket still has data, so a
// fast sender cannot make one read batch hold unbounded memory.
constexpr size_t kDispatchThreshold = 1u << 20;
// Bytes one readv() may take (spread over up to kReadIov blocks).
constexpr size_t kReadChunk = 64u << 10;
constexpr size_t kReadIov = 8;
// Bytes one event may read before the connection yields its thread to the others: a peer that
// keeps its socket full must not starve the rest of the worker's connections and timers.
constexpr size_t kReadBudgetPerEvent = 4u << 20;
// Nor may it hold the thread past this much time since the loop's iteration began (checked once
// it has read a chunk, so request/response traffic never reads the clock): 4 MiB of tiny frames
// (HTTP/2 floods, pipelined small requests) can take tens of milliseconds to handle.
constexpr int64_t kReadSliceNs = 1'000'000;
// Input read only to be dropped (lingering after our close, shutting down) stops after this much:
// a peer still sending then is not waiting for our last bytes (a flooder that ignores GOAWAY), and
// is left to its full TCP window until the linger ends.
constexpr size_t kMaxDiscardBytes = 4u << 20;
constexpr size_t kMaxWriteIov = 256;
// TLS: plaintext encrypted ahead of what the socket has taken. Enough for one sendmsg to carry
// a batch of replies; little enough that a backlog stays plaintext in out_, where it is counted
// and paused on like any other.
constexpr size_t kTlsEncryptAhead = 64u << 10;
// Server TLS handshakes in progress on this thread (a worker: a connection lives on its
// reactor's thread), against TlsConfig::max_handshakes.
thread_local uint32_t t_tls_handshakes = 0;
}  // namespace

Connection::Connection(Reactor* reactor, int fd, const NetAddress& peer, FrameCodec* codec,
                       Handler* handler, const ConnectionOptions& options, bool connecting)
    : reactor_(reactor),
      fd_(fd),
      peer_(peer),
      codec_(codec),
      codec_state_(codec->NewConnectionState()),
      session_(codec_state_ != nullptr ? codec_state_->session() : nullptr),
      handler_(handler),
      options_(options),
      state_(connecting ? State::kConnecting : State::kOpen),
      ordered_(codec->OrderedReplies()),
      write_limit_(options.max_pending_write_bytes) {
  if (options_.budget != nullptr) {
    options_.budget->ConnectionOpened();
    write_limit_ = std::min(write_limit_, BufferBudget::kStep);
  }
  if (options_.open_gauge != nullptr) options_.open_gauge->fetch_add(1, std::memory_order_relaxed);
  if (options_.tls != nullptr) {
    // (A null SSL, OpenSSL out of memory, is found at Start() and closes the connection.)
    // (A client resumes the session of its last connection to this address, if any.)
    if (SSL* ssl = options_.tls->NewSsl(options_.tls_host, peer_.ToString())) {
      tls_ = detail::TlsChannel::Create(ssl, fd_, options_.tls.get());
    }
    // A server's handshake starts with the first bytes; a client's once connected.
    handshaking_ = options_.tls->role() == TlsRole::kServer;
  }
}

const std::shared_ptr<const TlsPeer>& Connection::tls_peer() const {
  static const std::shared_ptr<const TlsPeer> kNone;
  return tls_ != nullptr && !handshaking_ && tls_->handshake_done() ? tls_->peer() : kNone;
}

void Connection::UncountHandshake() {
  if (!handshake_counted_) return;
  handshake_counted_ = false;
  --t_tls_handshakes;
}

size_t Connection::OutBytes() const {
  return out_.size() + (tls_ != nullptr ? tls_->wire().size() : 0);
}

Connection::~Connection() {
  delete close_signal_.load(std::memory_order_relaxed);
  if (state_ != State::kClosed) {
    ::close(fd_);
    // (Owners close their connections before dropping them; the bytes are not given back here,
    // as this may run on any thread, but the count of connections is.)
    if (options_.budget != nullptr) options_.budget->ConnectionClosed();
    if (options_.open_gauge != nullptr)
      options_.open_gauge->fetch_sub(1, std::memory_order_relaxed);
  }
}

bool Connection::TransitionAllowed(State from, State to) {
  if (to == State::kClosed) return from != State::kClosed;
  switch (from) {
    case State::kConnecting:
      return to == State::kOpen || to == State::kConnectingToClose;
    case State::kConnectingToClose:
      return to == State::kClosingAfterFlush;
    case State::kOpen:
      return to == State::kClosingAfterFlush;
    case State::kClosingAfterFlush:
      return to == State::kLingering;
    case State::kLingering:
    case State::kClosed:
      return false;
  }
  return false;
}

void Connection::Transition(State next) {
  // Every caller checks the state first, whatever the peer sends: an illegal transition is a
  // bug here, not bad input.
  assert(TransitionAllowed(state_, next));
  assert(next != State::kLingering || draining_);
  state_ = next;
}

void Connection::Start() {
  reactor_->AssertInLoopThread();
  last_active_ns_ = MonotonicNanos();
  started_ns_ = last_active_ns_;
  int rc = reactor_->poller().Add(fd_, EPOLLIN | EPOLLOUT | EPOLLRDHUP, this);
  if (rc != 0) {
    Close(fmt::format("epoll add: {}", strerror(-rc)), CloseCause::kIoError);
    return;
  }
  if (options_.idle_timeout_ms > 0) {
    ArmIdleTimer(last_active_ns_ + options_.idle_timeout_ms * kNanosPerMilli);
  }
  if (options_.silent_timeout_ms > 0) ArmReadTimer(SilentDeadline());
  if (options_.tls != nullptr) {
    if (tls_ == nullptr) {
      Close("TLS: OpenSSL could not make a connection object", CloseCause::kIoError);
      return;
    }
    if (handshaking_) {  // a server's
      if (t_tls_handshakes >= options_.tls->config().max_handshakes) {
        TlsCounters::Get().Fail(TlsFailure::kLimit);
        detail::LogPerPeer(peer_, fmt::format("TLS: {} handshakes in progress on this worker "
                                              "(ssl.max_handshakes): closing {}",
                                              t_tls_handshakes, peer_.ToString()));
        Close("too many TLS handshakes in progress", CloseCause::kOverLimit);
        return;
      }
      ++t_tls_handshakes;
      handshake_counted_ = true;
    }
    // From the start, connect included: a peer that connects and sends nothing, or stalls
    // mid-handshake, holds the connection this long at most.
    std::weak_ptr<Connection> weak = weak_from_this();
    handshake_timer_ = reactor_->AddTimer(
        last_active_ns_ + options_.tls->handshake_timeout_ms() * kNanosPerMilli, [weak] {
          if (auto self = weak.lock()) {
            self->handshake_timer_ = 0;
            self->OnHandshakeTimer();
          }
        });
  }
}

void Connection::OnHandshakeTimer() {
  if (closed() || (tls_->handshake_done() && !handshaking_)) return;
  TlsCounters::Get().Fail(TlsFailure::kTimeout);
  detail::LogPerPeer(peer_, fmt::format("TLS handshake with {} not done in {} ms: closing",
                                        peer_.ToString(), options_.tls->handshake_timeout_ms()));
  Close(fmt::format("TLS handshake not done in {} ms", options_.tls->handshake_timeout_ms()),
        CloseCause::kTimeout);
}

bool Connection::ContinueHandshake() {
  std::string err;
  TlsFailure failure = TlsFailure::kOther;
  detail::TlsChannel::Step step = tls_->Handshake(&err, &failure);
  const uint64_t raw = tls_->TakeBytesRead();
  // From the peer's first bytes OpenSSL holds its buffers (a silent peer costs none). A client
  // sends first: its buffers exist from its first step.
  if (raw != 0 || options_.tls->role() == TlsRole::kClient) handshake_began_ = true;
  stats_.bytes_in += raw;
  if (options_.traffic != nullptr) TrafficCounters::Add(options_.traffic->bytes_in, raw);
  if (raw != 0) last_active_ns_ = reactor_->LoopTimeNs();
  // Our handshake records (sent whatever the state: a client is still "connecting").
  if (WriteFrom(&tls_->wire()) == WriteResult::kClosed) return false;
  if (step == detail::TlsChannel::Step::kWantRead) {
    AccountBuffered();  // OpenSSL's buffers, now held (the bound counts them from here)
    return false;
  }
  if (step == detail::TlsChannel::Step::kFailed) {
    TlsCounters::Get().Fail(failure);
    detail::LogPerPeer(
        peer_, fmt::format("TLS with {}: {} ({})", peer_.ToString(), err, TlsFailureName(failure)));
    Close(err, CloseCause::kProtocolError);
    return false;
  }
  handshaking_ = false;
  UncountHandshake();
  if (handshake_timer_ != 0) {
    reactor_->CancelTimer(handshake_timer_);
    handshake_timer_ = 0;
  }
  NoteTlsTraffic();  // arms the idle release
  TlsCounters& counters = TlsCounters::Get();
  counters.handshakes.fetch_add(1, std::memory_order_relaxed);
  if (tls_->peer()->resumed) counters.resumed.fetch_add(1, std::memory_order_relaxed);
  if (connecting()) {
    Transition(state_ == State::kConnectingToClose ? State::kClosingAfterFlush : State::kOpen);
    handler_->OnConnected(this);
    if (closed()) return false;
  }
  Flush();
  return !closed();
}

void Connection::HandleEvents(uint32_t events) {
  ConnectionPtr self = shared_from_this();  // a handler may drop the owner's reference
  if (closed()) return;
  if (handshaking_) {
    if (options_.tls->role() == TlsRole::kServer) {
      // Writable with nothing of the handshake's to send (the first event of every new
      // connection): no step to take.
      if ((events & ~static_cast<uint32_t>(EPOLLOUT)) == 0 && tls_->wire().empty()) return;
      // A server's handshake step (its first is a key exchange and a signature, hundreds of
      // microseconds) runs as background work of the loop: after this poll's other events, one
      // per iteration, so a burst of new connections delays established ones by one step, not
      // by the whole burst. The step reads and writes the socket itself.
      // The events wait with it: a hang-up seen now must still make the first read go on to
      // the EOF (edge-triggered, no second edge comes).
      handshake_events_ |= events;
      if (!handshake_step_queued_) {
        handshake_step_queued_ = true;
        reactor_->PostBackground([self] {
          self->handshake_step_queued_ = false;
          const uint32_t seen = std::exchange(self->handshake_events_, 0);
          if (self->closed() || !self->handshaking_) return;
          if (!self->ContinueHandshake()) return;
          // Application data may have come with the handshake's last flight: OpenSSL holds it.
          self->HandleEvents(seen | EPOLLIN);
        });
      }
      return;
    }
    if (!ContinueHandshake()) return;
    // Application data may have come with the handshake's last flight: OpenSSL holds it.
    events |= EPOLLIN;
  } else if (connecting()) {
    if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
    int err = socket_ops::GetSocketError(fd_);
    if (err != 0 || (events & (EPOLLERR | EPOLLHUP))) {
      Close(fmt::format("connect to {} failed: {}", peer_.ToString(),
                        strerror(err ? err : ECONNREFUSED)),
            CloseCause::kIoError);
      return;
    }
    if (tls_ != nullptr) {
      handshaking_ = true;
      if (!ContinueHandshake()) return;
    } else {
      Transition(state_ == State::kConnectingToClose ? State::kClosingAfterFlush : State::kOpen);
      handler_->OnConnected(this);
      if (closed()) return;
      Flush();
      if (closed()) return;
    }
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) {
    // With a hang-up in the same edge as the last data, a short read does not mean "drained":
    // read on to the EOF, or the close is never seen (no further edge comes).
    HandleRead(/*to_eof=*/(events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0);
    if (closed()) return;
  }
  if ((events & EPOLLOUT) && HasOutput()) {
    Flush();
  }
}

void Connection::HandleRead(bool to_eof) {
  if (handshaking_) {
    // A posted read (a resume after the buffer bound paused the connection, a yield): the
    // handshake reads for itself; let it look at what arrived meanwhile (edge-triggered: no new
    // event would come for it).
    HandleEvents(EPOLLIN);
    return;
  }
  in_batch_ = true;
  DeliverFrames();  // frames held back while the write queue was over its limit
  size_t read_this_event = 0;
  while (!closed() && !reading_paused_ && !peer_closed_) {
    if (draining_ && discarded_ >= kMaxDiscardBytes) break;
    // Input read only to be dropped (lingering after our close, shutting down) gets a chunk per
    // turn: a peer that keeps sending after a GOAWAY or a 400 is throttled by its own window.
    if (read_this_event >= kReadBudgetPerEvent ||
        (read_this_event >= kReadChunk &&
         (draining_ || MonotonicNanos() - reactor_->LoopTimeNs() >= kReadSliceNs))) {
      // Continue after the loop has served everyone else (edge-triggered: no new edge comes).
      std::weak_ptr<Connection> weak = weak_from_this();
      reactor_->Post([weak] {
        if (auto self = weak.lock(); self && !self->closed()) self->HandleRead(/*to_eof=*/true);
      });
      break;
    }
    size_t room = SIZE_MAX;
    if (options_.budget != nullptr && options_.budget->budget().Over()) [[unlikely]] {
      // Over the bound every read counts before the next: a connection takes at most what its
      // allowance has left, so thousands of them cannot each read an event's worth past it.
      room = BudgetRoom();
      if (room == 0) break;  // paused
    }
    iovec iov[kReadIov];
    // While reads come back smaller than one block (request/response traffic), read(2) into
    // the free space of the current block: readv(2) would import kReadIov iovecs per call (and
    // PrepareWrite line up that many blocks) for nothing. A read that fills the space switches
    // back to the full scatter read for bulk input.
    // (TLS: one block at a time; OpenSSL reads the socket in whole records itself.)
    size_t n_iov = small_reads_ || tls_ != nullptr ? in_.PrepareWrite(iov, 1, 1)
                                                   : in_.PrepareWrite(iov, kReadIov, kReadChunk);
    size_t want = 0;
    for (size_t i = 0; i < n_iov; ++i) want += iov[i].iov_len;
    if (want > room) [[unlikely]] {
      want = 0;
      for (size_t i = 0; i < n_iov; ++i) {
        iov[i].iov_len = std::min(iov[i].iov_len, room - want);
        want += iov[i].iov_len;
        if (want == room) n_iov = i + 1;
      }
    }
    std::string tls_err;
    ssize_t n;
    if (tls_ != nullptr) {
      NoteTlsTraffic();
      n = tls_->Read(iov[0].iov_base, std::min(iov[0].iov_len, want), &tls_err);
    } else {
      n = n_iov == 1 ? ::read(fd_, iov[0].iov_base, iov[0].iov_len)
                     : ::readv(fd_, iov, static_cast<int>(n_iov));
      if (n > 0) small_reads_ = static_cast<size_t>(n) < iov[0].iov_len;
    }
    if (n > 0) {
      if (stats_.bytes_in == 0 && options_.detect_tls &&
          RefuseTlsOnPlaintext(static_cast<const char*>(iov[0].iov_base), static_cast<size_t>(n))) {
        in_batch_ = false;
        return;
      }
      in_.CommitWrite(static_cast<size_t>(n));
      // Traffic is what crossed the socket: TLS records, not the plaintext in them.
      const uint64_t raw = tls_ != nullptr ? tls_->TakeBytesRead() : static_cast<uint64_t>(n);
      stats_.bytes_in += raw;
      if (options_.traffic != nullptr) TrafficCounters::Add(options_.traffic->bytes_in, raw);
      read_this_event += static_cast<size_t>(n);
      last_active_ns_ = reactor_->LoopTimeNs();
      if (draining_) {
        in_.Clear();  // shutting down: read only so that the close is not a reset
        discarded_ += static_cast<size_t>(n);
      } else if (in_.size() >= kDispatchThreshold || in_.size() > options_.max_packet_size) {
        // A long pipelined stream: handle what is here and send its replies before reading on.
        // (Past max_packet_size too: a frame that big is refused now, not after 1 MiB more.)
        ProcessInput();
        if (!closed() && HasOutput()) Flush();
        // An incomplete large frame stays in in_: the budget sees it every 1 MiB.
        if (!closed()) AccountBuffered();
      }
      // A short read drained the socket; edge-triggered epoll reports the next arrival, so the
      // extra read(2) that would only return EAGAIN is skipped.
      if (!to_eof && (tls_ != nullptr ? !tls_->MayHaveMore() : static_cast<size_t>(n) < want)) {
        break;
      }
      continue;
    }
    if (n == 0) {
      peer_closed_ = true;
      if (codec_state_ != nullptr) codec_state_->OnInputEnded();
      // The replies may still be written, but nobody waits for them.
      if (!codec_->PeerMayHalfClose()) FireCloseSignals("the peer closed the connection");
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    in_batch_ = false;
    if (!tls_err.empty()) {
      // A bad record, a renegotiation attempt: the peer's bytes, not the socket.
      detail::LogPerPeer(
          peer_, fmt::format("closing TLS connection from {}: {}", peer_.ToString(), tls_err));
      Close(tls_err, CloseCause::kProtocolError);
      return;
    }
    Close(fmt::format("read: {}", strerror(errno)), CloseCause::kIoError);
    return;
  }
  if (!closed()) ProcessInput();
  in_batch_ = false;
  if (closed()) return;
  if (state_ == State::kLingering) {
    if (peer_closed_) Close(close_reason_, close_cause_);  // both FINs exchanged: an orderly close
    return;
  }
  Flush();
  if (peer_closed_ && !closed() && !reading_paused_ && !draining_ &&
      next_frame_ == frames_.size()) {
    // (With requests still pending, CloseAfterFlush waits for their replies.)
    // The peer sent FIN: every request it sent has been handled; close once the replies are out.
    CloseAfterFlush("peer closed", CloseCause::kPeerClosed);
  }
}

void Connection::ProcessInput() {
  if (draining_) return;
  if (input_finished_) {
    in_.Clear();  // the protocol has ended this connection's input
  } else if (!in_.empty()) {
    std::string err;
    const size_t frames_before = frames_.size();
    if (session_ != nullptr && options_.budget != nullptr) {
      // Over the bound no connection takes on new work it would have to hold (an HTTP/2
      // stream's state), whatever its share: those that took theirs while the total was under
      // keep it, so a share per connection on top would let the total pass the bound by as much
      // again. The state still admits one unit where it holds nothing, so every connection
      // makes progress.
      session_->held_allowance = options_.budget->budget().Over() ? 0 : SIZE_MAX;
    }
    SplitResult r =
        codec_->SplitWithState(&in_, &frames_, options_.max_packet_size, &err, codec_state_.get());
    if (r == SplitResult::kError) {
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000, "closing connection from {}: {}", peer_.ToString(),
                        err);
      if (codec_state_ == nullptr || codec_state_->immediate.empty()) {
        Close("protocol error: " + err, CloseCause::kProtocolError);
        return;
      }
      // The protocol answers the bad frame (HTTP's 400) after the good frames cut before it.
      input_finished_ = true;
      finish_reason_ = "protocol error: " + err;
      finish_cause_ = CloseCause::kProtocolError;
      in_.Clear();
    } else if (codec_state_ != nullptr) {
      if (codec_state_->closing) {
        input_finished_ = true;
        finish_reason_ = "the peer asked to close";
        finish_cause_ = CloseCause::kPeerClosed;
        in_.Clear();
      } else if (!codec_state_->immediate.empty()) {
        SendImmediate(sequencer_.Peek() + (frames_.size() - next_frame_), /*final=*/false);
      }
      if (const int64_t deadline = codec_state_->ReadDeadline();
          deadline != 0 && !input_finished_) {
        ArmReadTimer(deadline);
      }
    }
    if (options_.frame_read_timeout_ms > 0 && !in_.empty() && !closed()) {
      NoteFrameProgress(frames_.size() != frames_before);
    }
  }
  if (in_.empty()) frame_started_ns_ = 0;
  DeliverFrames();
  if (input_finished_ && !closed() && next_frame_ == frames_.size()) FinishInput();
}

void Connection::FinishInput() {
  if (closing_after_flush()) return;
  if (codec_state_ != nullptr && !codec_state_->immediate.empty()) {
    SendImmediate(ordered_ ? sequencer_.Take() : 0, /*final=*/true);
  }
  CloseAfterFlush(finish_reason_, finish_cause_);
}

void Connection::SendImmediate(uint64_t slot, bool final) {
  ChainBuffer bytes = std::move(codec_state_->immediate);
  codec_state_->immediate.Clear();
  if (!ordered_) {
    // Wire bytes already (never through EncodeOutput).
    if (!accepts_output()) return;
    out_.Append(std::move(bytes));
    if (!in_batch_) Flush();
    return;
  }
  ChainBuffer ready;
  if (final) {
    sequencer_.Put(slot, std::move(bytes), &ready);
  } else {
    sequencer_.PutInterim(slot, std::move(bytes), &ready);
  }
  if (!ready.empty()) Send(std::move(ready));
}

bool Connection::QueueReply(uint64_t slot, ChainBuffer&& data) {
  if (slot == 0 || sequencer_.PassInOrder(slot)) return Queue(std::move(data));
  ChainBuffer ready;
  sequencer_.Put(slot, std::move(data), &ready);
  return Queue(std::move(ready));
}

bool Connection::Queue(ChainBuffer&& data) {
  // (A message may be metadata alone: a session protocol's reply that is only a status.)
  if (data.Blank() || !accepts_output()) return false;
  if (session_ != nullptr) {
    const size_t before = out_.size();
    session_->EncodeOutput(std::move(data), &out_);
    return out_.size() != before;
  }
  out_.Append(std::move(data));
  return true;
}

void Connection::CancelOutgoing(uint32_t request_id) {
  if (session_ == nullptr || !accepts_output()) return;
  const size_t before = out_.size();
  session_->CancelCall(request_id, &out_);
  if (out_.size() != before && !in_batch_) Flush();
}

void Connection::SendReply(uint64_t slot, ChainBuffer&& data, bool ends_request) {
  const bool queued = QueueReply(slot, std::move(data));
  if (!ends_request) {
    if (queued) PostFlush();
    return;
  }
  if (pending_requests_ > 0) --pending_requests_;
  if (closed() || in_batch_) return;  // (in a batch, the batch's own flush sends it)
  if (pending_requests_ == 0) {
    // Every request read so far is answered, so no later reply can join the ones queued: send
    // them now. A posted flush would run only when the worker next polls its IO (after up to a
    // poll interval of other fibers, and in two pieces when a poll falls in the middle of a
    // pipelined batch), and posting it costs a task per reply at pipelining depth 1.
    if (queued || closing_after_flush() || (flush_posted_ && !out_.empty())) Flush();
  } else if (queued) {
    PostFlush();
  }
  if (closed() || closing_after_flush() || !reading_paused_ || budget_paused_) return;
  if (OutBytes() <= options_.max_pending_write_bytes / 2 &&
      pending_requests_ < options_.max_pending_requests) {
    ResumeReadingSoon();
  }
}

void Connection::Shutdown(const std::string& reason) {
  if (closed()) return;
  // Input is discarded from now on, so nothing is held back: what arrived while paused is read
  // (and dropped) from a task, since this may run inside a handler.
  StopReading();
  if (session_ != nullptr && accepts_output()) session_->OnShutdown(&out_);
  CloseAfterFlush(reason);
}

void Connection::BeginLinger() {
  if (peer_closed_ || options_.linger_ms <= 0) {
    // The peer has sent everything it will send (or lingering is off): nothing to wait for.
    Close(close_reason_, close_cause_);
    return;
  }
  draining_ = true;
  Transition(State::kLingering);
  frames_.clear();
  next_frame_ = 0;
  in_.Clear();
  if (tls_ != nullptr && !handshaking_) {
    // close_notify first, so a TLS peer sees an orderly end, not a truncation.
    tls_->Shutdown();
    if (WriteFrom(&tls_->wire()) == WriteResult::kClosed) return;
  }
  if (::shutdown(fd_, SHUT_WR) != 0) {
    Close(close_reason_, close_cause_);
    return;
  }
  // Reading may still be paused for the backlog just written: lingering reads (and drops) input
  // until the peer's FIN, as StopReading() does.
  if (reading_paused_) ResumeReadingSoon();
  // Bounded from now, not from the last activity: a peer that keeps sending cannot hold the
  // connection open.
  std::weak_ptr<Connection> weak = weak_from_this();
  linger_timer_ =
      reactor_->AddTimer(reactor_->LoopTimeNs() + options_.linger_ms * kNanosPerMilli, [weak] {
        if (auto self = weak.lock()) {
          self->linger_timer_ = 0;
          self->Close(self->close_reason_, self->close_cause_);
        }
      });
  // Input that is already here raises no new edge: read and drop it now (from a task, as this
  // may run inside a handler or a flush).
  reactor_->Post([weak] {
    if (auto self = weak.lock(); self && !self->closed()) self->HandleRead(/*to_eof=*/true);
  });
}

void Connection::DeliverFrames() {
  // One frame at a time, so the write-queue limit is checked between handlers: a batch of small
  // requests with large replies cannot queue more than one reply beyond the limit.
  if (frames_.empty()) return;
  while (next_frame_ < frames_.size()) {
    if (options_.pause_reading_when_backlogged && ShouldPause()) {
      reading_paused_ = true;
      return;
    }
    frame_slot_ = ordered_ ? sequencer_.Take() : 0;
    handler_->OnFrame(this, std::move(frames_[next_frame_++]));
    frame_slot_ = 0;
    if (closed()) return;
  }
  frames_.clear();
  next_frame_ = 0;
  handler_->OnBatchEnd(this);
}

void Connection::Send(ChainBuffer&& data) {
  if (!accepts_output()) return;
  Queue(std::move(data));
  if (!in_batch_) Flush();  // (also with nothing new: Send(ChainBuffer()) writes what is queued)
}

void Connection::SendSoon(ChainBuffer&& data) {
  if (Queue(std::move(data))) PostFlush();
}

void Connection::SendWire(ChainBuffer&& data, bool now) {
  if (data.empty() || !accepts_output()) return;
  out_.Append(std::move(data));
  if (!now) {
    PostFlush();
  } else if (!in_batch_) {
    Flush();
  }
}

void Connection::PostFlush() {
  if (in_batch_ || flush_posted_) return;
  flush_posted_ = true;
  std::weak_ptr<Connection> weak = weak_from_this();
  reactor_->Post([weak] {
    if (auto self = weak.lock()) {
      self->flush_posted_ = false;
      if (!self->closed()) self->Flush();
    }
  });
}

Connection::WriteResult Connection::WriteFrom(ChainBuffer* src) {
  while (!src->empty()) {
    iovec iov[kMaxWriteIov];
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = src->ExportIovecs(iov, kMaxWriteIov);
    // sendmsg/send rather than writev/write: MSG_NOSIGNAL turns a write to a reset peer into
    // EPIPE instead of a process-killing SIGPIPE. One span (most replies and reply batches:
    // they are appended to one block) goes with send(2), which skips the iovec import.
    ssize_t n = msg.msg_iovlen == 1 ? ::send(fd_, iov[0].iov_base, iov[0].iov_len, MSG_NOSIGNAL)
                                    : ::sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n > 0) {
      src->Skip(static_cast<size_t>(n));
      stats_.bytes_out += static_cast<uint64_t>(n);
      if (options_.traffic != nullptr) {
        TrafficCounters::Add(options_.traffic->bytes_out, static_cast<uint64_t>(n));
      }
      last_active_ns_ = reactor_->LoopTimeNs();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return WriteResult::kBlocked;  // EPOLLOUT finishes the job
    }
    Close(fmt::format("write: {}", strerror(errno)), CloseCause::kIoError);
    return WriteResult::kClosed;
  }
  return WriteResult::kDrained;
}

void Connection::Flush() {
  if (!writable() || handshaking_) return;
  if (tls_ == nullptr) {
    if (WriteFrom(&out_) == WriteResult::kClosed) return;
  } else {
    // Encrypt a slice ahead of the socket, send it, repeat while the socket takes it.
    NoteTlsTraffic();
    for (;;) {
      if (tls_->wire().size() < kTlsEncryptAhead && !out_.empty()) {
        std::string err;
        if (!tls_->Encrypt(&out_, kTlsEncryptAhead, &err)) {
          Close(err, CloseCause::kIoError);
          return;
        }
      }
      WriteResult r = WriteFrom(&tls_->wire());
      if (r == WriteResult::kClosed) return;
      if (r == WriteResult::kBlocked || out_.empty()) break;
    }
  }
  if (state_ == State::kClosingAfterFlush && !HasOutput() && pending_requests_ == 0) {
    BeginLinger();
    return;
  }
  AccountBuffered();
  if (!reading_paused_ && !draining_ && options_.pause_reading_when_backlogged && ShouldPause()) {
    reading_paused_ = true;
  } else if (reading_paused_ && !budget_paused_ && !in_batch_ &&
             OutBytes() <= options_.max_pending_write_bytes / 2 &&
             pending_requests_ < options_.max_pending_requests) {
    ResumeReadingSoon();
  }
}

bool Connection::RefuseTlsOnPlaintext(const char* data, size_t n) {
  // A handshake record: type 0x16, version 0x03 0x0?. Garbage rarely starts so, and no
  // plaintext protocol we serve does.
  if (n < 3 || data[0] != 0x16 || !detail::LooksLikeTlsHandshake(data, n)) return false;
  TlsCounters::Get().Fail(TlsFailure::kTlsOnPlaintext);
  detail::LogPerPeer(peer_, fmt::format("{} sent a TLS handshake to a port without TLS: closing "
                                        "(give the service an ssl: section, or connect without "
                                        "TLS)",
                                        peer_.ToString()));
  Close("TLS handshake on a plaintext port", CloseCause::kProtocolError);
  return true;
}

bool Connection::PauseCheck() {
  if (Backlogged()) return true;
  // Only the budget's report point was passed: report, and the budget may say stop.
  AccountBufferedSlow();
  return budget_paused_;
}

void Connection::AccountBufferedSlow() {
  size_t now = in_.size() + OutBytes() + TlsLibraryBytes() + StreamHeldBytes();
  if (session_ != nullptr) now += session_->held_bytes;
  for (size_t i = next_frame_; i < frames_.size(); ++i) now += frames_[i].size();
  BufferBudget::Slot* slot = options_.budget;
  if (now != budget_bytes_) {
    slot->Add(static_cast<int64_t>(now) - static_cast<int64_t>(budget_bytes_));
    budget_bytes_ = now;
  }
  write_limit_ = std::min(options_.max_pending_write_bytes, OutBytes() + BufferBudget::kStep);
  // Over the bound, the connections holding more than their allowance stop reading (and
  // handing up frames, so producing replies); the others go on. A draining connection reads
  // only to discard, which frees memory.
  if (budget_paused_ || draining_ || now <= slot->budget().Allowance()) {
    return;
  }
  budget_paused_ = true;
  reading_paused_ = true;
  slot->Paused(shared_from_this());
}

size_t Connection::BudgetRoom() {
  AccountBufferedSlow();
  if (budget_paused_) return 0;
  uint64_t allowance = options_.budget->budget().Allowance();
  if (allowance == UINT64_MAX) return SIZE_MAX;  // back under the bound meanwhile
  // At least a little: a connection under its allowance keeps making progress.
  return std::max<size_t>(4096, allowance > budget_bytes_ ? allowance - budget_bytes_ : 0);
}

void Connection::AbortOverBudget(const std::string& why) {
  // With a reset: the peer reads nothing, so a normal close would leave the replies in the
  // kernel (an orphaned socket probing a zero window for minutes) and the peer none the wiser.
  linger reset{1, 0};
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  Close(why, CloseCause::kOverLimit);
}

void Connection::ResumeAfterBudget() {
  if (!budget_paused_ || closed()) return;
  budget_paused_ = false;
  if (reading_paused_ && !Backlogged()) ResumeReadingSoon();
}

void Connection::ResumeReadingSoon() {
  reading_paused_ = false;
  // A partial frame's time starts again: while we did not read, the peer could not finish it.
  if (frame_started_ns_ != 0) frame_started_ns_ = reactor_->LoopTimeNs();
  budget_paused_ = false;  // (StopReading, BeginLinger: input is read to be discarded)
  // Edge-triggered: bytes that arrived while paused raise no new event, so read them now —
  // from a task, not from here, so pause/resume cycles never nest on the stack.
  std::weak_ptr<Connection> weak = weak_from_this();
  reactor_->Post([weak] {
    if (auto self = weak.lock(); self && !self->closed()) self->HandleRead(/*to_eof=*/true);
  });
}

void Connection::StopReading() {
  if (closed() || draining_) return;
  draining_ = true;
  frames_.clear();
  next_frame_ = 0;
  in_.Clear();
  if (reading_paused_) ResumeReadingSoon();  // read on, to discard: a close must not reset
}

void Connection::CloseAfterFlush(const std::string& reason, CloseCause cause) {
  if (closed()) return;
  if (handshaking_) {
    // Nothing was said in the clear and nothing can be flushed before the handshake ends.
    Close(reason, cause);
    return;
  }
  // The cause is why the close began: a later request to close (the peer's FIN after a
  // protocol error, say) changes only the text.
  if (state_ == State::kConnecting) {
    Transition(State::kConnectingToClose);
    close_cause_ = cause;
  } else if (state_ == State::kOpen) {
    Transition(State::kClosingAfterFlush);
    close_cause_ = cause;
  }
  close_reason_ = reason;
  if (!connecting() && !in_batch_) Flush();
}

void Connection::Close(const std::string& reason, CloseCause cause) {
  if (closed()) return;
  if (state_ == State::kOpen || state_ == State::kConnecting) close_cause_ = cause;
  Transition(State::kClosed);
  reactor_->poller().Remove(fd_);
  ::close(fd_);
  if (idle_timer_ != 0) {
    reactor_->CancelTimer(idle_timer_);
    idle_timer_ = 0;
  }
  if (linger_timer_ != 0) {
    reactor_->CancelTimer(linger_timer_);
    linger_timer_ = 0;
  }
  if (read_timer_ != 0) {
    reactor_->CancelTimer(read_timer_);
    read_timer_ = 0;
  }
  if (handshake_timer_ != 0) {
    reactor_->CancelTimer(handshake_timer_);
    handshake_timer_ = 0;
  }
  UncountHandshake();
  if (tls_idle_timer_ != 0) {
    reactor_->CancelTimer(tls_idle_timer_);
    tls_idle_timer_ = 0;
  }
  in_.Clear();
  out_.Clear();
  if (options_.budget != nullptr) {
    // The frames not handed up are freed with the connection; they no longer count either.
    options_.budget->Add(-static_cast<int64_t>(budget_bytes_));
    options_.budget->ConnectionClosed();
    options_.budget = nullptr;
    budget_bytes_ = 0;
  }
  if (options_.open_gauge != nullptr) {
    options_.open_gauge->fetch_sub(1, std::memory_order_relaxed);
    options_.open_gauge = nullptr;
  }
  FireCloseSignals("the connection closed: " + reason);
  handler_->OnClose(this, reason);
}

void Connection::FireCloseSignals(const std::string& why) {
  if (codec_state_ != nullptr) codec_state_->OnConnectionClosed();
  signal_closed_.store(true);
  if (std::shared_ptr<CancelSignal>* signal = close_signal_.load()) {
    (*signal)->Cancel(Status(kServerSystemErr, why));
  }
}

std::shared_ptr<CancelSignal> Connection::CloseSignal() {
  std::shared_ptr<CancelSignal>* signal = close_signal_.load();
  if (signal == nullptr) {
    auto* made = new std::shared_ptr<CancelSignal>(std::make_shared<CancelSignal>());
    if (close_signal_.compare_exchange_strong(signal, made)) {
      signal = made;
    } else {
      delete made;  // another thread's is in (and in `signal` now)
    }
  }
  // Closed meanwhile, maybe before Close() could see this signal (Cancel is idempotent).
  if (signal_closed_.load()) (*signal)->Cancel(Status(kServerSystemErr, "the connection closed"));
  return *signal;
}

void Connection::QueueReplyWhileLoopHeld(uint64_t slot, ChainBuffer&& data, bool ends_request) {
  QueueReply(slot, std::move(data));
  if (ends_request && pending_requests_ > 0) --pending_requests_;
}

void Connection::FlushAndShutdownWhileLoopHeld() {
  if (closed()) return;
  ChainBuffer* src = &out_;
  if (tls_ != nullptr) {
    // Never plaintext on a TLS connection: encrypt what is queued (nothing before the
    // handshake is done).
    std::string err;
    if (handshaking_ || !tls_->Encrypt(&out_, SIZE_MAX, &err)) out_.Clear();
    src = &tls_->wire();
  }
  while (writable() && !src->empty()) {
    iovec iov[kMaxWriteIov];
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = src->ExportIovecs(iov, kMaxWriteIov);
    ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      src->Skip(static_cast<size_t>(n));
      stats_.bytes_out += static_cast<uint64_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // a full socket or an error: what is left is lost with the connection
    }
  }
  ::shutdown(fd_, SHUT_RDWR);
}

bool FrameCodec::IsStreamFrameSlow(const ChainBuffer& frame) const {
  if (frame.size() <= static_cast<size_t>(stream_mark_offset_)) return false;
  char scratch[64];
  return static_cast<uint8_t>(frame.Peek(static_cast<size_t>(stream_mark_offset_) + 1,
                                         scratch)[stream_mark_offset_]) == stream_mark_value_;
}

}  // namespace trpc
