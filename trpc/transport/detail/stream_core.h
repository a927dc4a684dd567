#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "trpc/base/cancel_signal.h"
#include "trpc/base/chain_buffer.h"
#include "trpc/base/status.h"
#include "trpc/fiber/condition_variable.h"
#include "trpc/fiber/mutex.h"
#include "trpc/future/future.h"
#include "trpc/transport/connection.h"

namespace trpc::detail {

class StreamLink;

/// A stream's metadata, key to value (the type of the codecs' TransInfo; transport names no
/// codec).
using StreamMetadata = std::map<std::string, std::string>;

/// The framework codes one side's stream ends report (trpc.proto's numbers, 2xx on the server,
/// 3xx on the client).
struct StreamCodes {
  int32_t network;       // the connection was lost (201 / 301)
  int32_t read_end;      // end of the peer's messages (251 / 351)
  int32_t read_timeout;  // a Read's timeout passed (254 / 354)
  int32_t write_end;     // written after our side finished (231 / 331)
  int32_t too_much;      // unread bytes past the bound without flow control (211 / 311)
};
inline constexpr StreamCodes kServerStreamCodes{kStreamServerNetworkErr, kStreamServerReadEnd,
                                                kStreamServerReadTimeoutErr, kStreamServerWriteEnd,
                                                kStreamServerMsgExceedLimitErr};
inline constexpr StreamCodes kClientStreamCodes{kStreamClientNetworkErr, kStreamClientReadEnd,
                                                kStreamClientReadTimeoutErr, kStreamClientWriteEnd,
                                                kStreamClientMsgExceedLimitErr};

/// One stream's end between the connection's loop thread, where its frames arrive and leave, and
/// the thread of its user (a server's handler, a client's caller), which reads and writes its
/// messages (stream::ServerStream on the server). Protocol-neutral: the loop side talks to the
/// connection's stream session through StreamLink; both ends of a stream, client and server,
/// are one of these, with their side's codes (StreamCodes).
///
/// - **In:** the loop appends each message to the inbox and wakes the reader. The inbox holds at
///   most what the client may send unread: its window when flow control runs. The reader
///   reports what it consumed back to the loop once more than a quarter of the window has
///   been read (the protocol returns credit no sooner), so reading costs no hop per message.
/// - **Out:** Write() posts the message to the loop and returns; the loop sends it when the
///   client's window has room (without flow control: while the connection's unwritten output
///   is below kNoWindowBacklogBytes), else parks it. While a message is parked, or more than
///   kMaxQueuedBytes posted ones wait for the loop, the next Write() blocks: what a writer
///   holds is bounded by the window plus that constant plus one message.
/// - **End:** the handler's status finishes our side (Finish); the client's CLOSE ends the
///   inbox (Read() gets end of stream after the last message); a reset or a lost connection
///   ends both and wakes both sides.
/// - **Two forms:** Read()/Write() block (a fiber parks, a thread sleeps); AsyncRead()/
///   AsyncWrite() never block and resolve their futures on the loop thread when the message
///   comes or the window has room, so a handler running on a reactor (merge) streams too.
///   One read at a time, of either form; likewise writes.
///
/// Memory ordering: mu_ (fiber::Mutex) guards the shared fields; a reader or writer woken by
/// cv_ re-checks them under mu_, so everything the loop did before notifying is visible. The
/// loop-only fields are touched only in tasks that run on the connection's loop.
class StreamCore : public std::enable_shared_from_this<StreamCore> {
 public:
  static constexpr size_t kMaxQueuedBytes = 64 * 1024;
  /// A stream without flow control (the client announced no window) sends only while its
  /// connection has less than this unwritten: a client that stops reading cannot make the
  /// server buffer without bound.
  static constexpr size_t kNoWindowBacklogBytes = 256 * 1024;

  StreamCore(ConnectionPtr conn, uint32_t id, uint32_t content_type, uint32_t encoding,
             size_t max_message_bytes, uint32_t window,
             const StreamCodes& codes = kServerStreamCodes)
      : codes_(codes),
        conn_(std::move(conn)),
        id_(id),
        content_type_(content_type),
        encoding_(encoding),
        max_message_bytes_(max_message_bytes),
        window_(window) {}

  uint32_t id() const { return id_; }
  const StreamCodes& codes() const { return codes_; }
  uint32_t content_type() const { return content_type_; }
  uint32_t encoding() const { return encoding_; }
  size_t max_message_bytes() const { return max_message_bytes_; }

  // ---- The handler's side (a fiber, or a thread that may block). ----
  /// The next message's bytes (as the client encoded them), or how the inbox ended; waits up
  /// to `timeout_ms` (< 0: no limit).
  Status Read(ChainBuffer* msg, int64_t timeout_ms);
  /// Queues one encoded message; blocks while the writer is over its bound (see above).
  Status Write(ChainBuffer&& msg);
  /// The same without blocking: the future resolves with the message, or fails with how the
  /// inbox ended (ret 251 at its end), or with the read timeout (254 / 354) when `timeout_ms`
  /// (>= 0) passes first (a timer of the connection's loop, cancelled when the message comes).
  Future<ChainBuffer> AsyncRead(int64_t timeout_ms = -1);
  /// Resolves once the message is taken within the writer's bound (see above); fails once the
  /// stream has ended.
  Future<> AsyncWrite(ChainBuffer&& msg);
  /// Whether the message the last Read()/AsyncRead() took came compressed on the wire (a
  /// stream with a content encoding, or a gRPC message flagged compressed).
  bool LastReadCompressed() const { return last_read_compressed_.load(std::memory_order_relaxed); }
  /// Our side ends with `status` (once; later calls are ignored).
  void Finish(const Status& status);
  /// Ends the stream both ways with `status` (a reset), whether or not our side has finished.
  void Reset(const Status& status);
  /// Its user has let go of it (a client's last handle): Reset() with `status` unless the stream
  /// has ended both ways already, so the peer and the connection let go of it too.
  void Abandon(const Status& status);
  /// Metadata for the stream's start (gRPC's response headers), added before the first Write;
  /// and for its end (gRPC's trailers), set before Finish. Protocols without them drop them.
  void AddInitialMetadata(std::string key, std::string value);
  void SetTrailingMetadata(StreamMetadata md);

  // ---- The loop's side (the connection's loop thread). ----
  /// Links the stream to its connection's streams, before the handler starts; `flow_control`:
  /// the window is counted; `count_unread`: the unread messages count in the connection's held
  /// bytes (Connection::AddStreamHeldBytes) from here, unless the protocol counts them itself.
  void Attach(StreamLink* link, bool flow_control, bool count_unread) {
    link_ = link;
    flow_control_ = flow_control;
    count_unread_ = count_unread;
  }
  ~StreamCore() {
    if (count_unread_ && inbox_bytes_ != 0) {
      conn_->AddStreamHeldBytes(-static_cast<int64_t>(inbox_bytes_));
    }
  }
  StreamLink* link() const { return link_; }
  /// Fired when the stream is cut (reset by the peer, a timeout, a lost connection, an error
  /// end), not when our side finishes normally: what was started on its behalf stops with it.
  void SetCancelSignal(std::shared_ptr<CancelSignal> s) { cancel_signal_ = std::move(s); }
  bool flow_control() const { return flow_control_; }
  void OnMessage(ChainBuffer&& msg);
  /// Resets the stream with `status`'s code once no message has come or gone for `idle_ms`, or
  /// once it has been open `total_ms` (0: no such limit); arm once, before the handler runs.
  /// One loop timer per stream, re-armed only when it fires: a message costs a clock read.
  void ArmTimeouts(int64_t idle_ms, int64_t total_ms, int32_t code);
  /// The client's side ended: OK = half-close, else reset (both sides end).
  void OnRemoteEnd(const Status& status);
  /// The window has room again: sends what is parked while it lasts.
  void OnWritable();
  /// The connection is gone (or the stream was forgotten): both sides end with `status`.
  void Detach(const Status& status);
  /// Client: the server closed its side with `final` (its status for the whole stream): the
  /// inbox ends after what it holds, and writes fail from now on (the server reads no more).
  void OnPeerFinished(const Status& final);
  /// The server's final status, once OnPeerFinished or a reset has come (any thread).
  Status FinalStatus();
  /// Loop task for a posted message: send it now or park it.
  void SendOrPark(ChainBuffer&& msg);

 private:
  const StreamCodes codes_;
  struct PendingWrite {
    ChainBuffer msg;
    Promise<> done;
  };
  // Under mu_: moves the next message out and counts it toward the credit to report; returns
  // the bytes to report now (0: none yet).
  size_t TakeLocked(ChainBuffer* msg);
  // Under mu_: why the inbox gives no more messages.
  Status InboxEndLocked() const;
  // Under mu_: why a write cannot be taken (OK: it can, when the bound allows).
  Status WriteRefusalLocked() const;
  bool WriteRoomLocked() const { return !blocked_ && queued_bytes_ < kMaxQueuedBytes; }
  void ReportConsumed(size_t n);
  void PostSend(ChainBuffer&& msg);
  // Runs `fn` (what puts this stream's frames on the wire: a message, the finish, a reset) on
  // the loop, in the order of the calls: at once when called on the loop with none of this
  // stream's earlier ones still queued there, else queued behind them. A fiber that posted
  // from another worker (it was stolen) and then runs on the loop's own worker would
  // otherwise overtake what it posted: its CLOSE before its last messages.
  void InOrderOnLoop(std::function<void()> fn);
  // Loop: async writes waiting for the bound to allow them go, in order, while it does.
  void ServeWriteWaiters();
  // Resolves the waiting async reader with the next message or the inbox's end, if it can.
  void ServeReadWaiter();
  // Loop: the timeout of the async read `seq`, if it still waits.
  void ArmReadTimeout(uint64_t seq, int64_t timeout_ms);
  void ExpireRead(uint64_t seq, int64_t timeout_ms);

  ConnectionPtr conn_;
  const uint32_t id_;
  const uint32_t content_type_;
  const uint32_t encoding_;
  const size_t max_message_bytes_;
  const uint32_t window_;

  // InOrderOnLoop's tasks queued on the loop and not yet run. Incremented by the caller
  // before it posts, decremented by the task on the loop; read on the loop. Relaxed: a caller
  // that reads it on the loop after posting from elsewhere got there through the scheduler's
  // hand-over of its fiber (or thread), which orders its own increment before the read; a
  // decrement is the loop's own write.
  std::atomic<uint32_t> posted_{0};
  fiber::Mutex mu_;
  fiber::ConditionVariable cv_;
  // Guarded by mu_.
  std::deque<ChainBuffer> inbox_;
  size_t inbox_bytes_ = 0;
  // Set as a message is taken; relaxed: the one reader reads it after its own take (a future
  // resolved on the loop hands its result over with the ordering it needs).
  std::atomic<bool> last_read_compressed_{false};
  bool remote_ended_ = false;  // no more messages come (half-close or reset)
  Status end_status_;   // why both sides ended (a reset, a lost connection); OK: they did not
  bool ended_ = false;  // both sides ended
  bool writes_closed_ = false;  // the peer reads no more (it finished its side)
  Status final_;                // client: the server's status for the stream
  bool finished_ = false;       // Finish() was called
  size_t unreported_ = 0;       // consumed bytes not yet reported to the loop
  size_t queued_bytes_ = 0;     // posted by Write(), not yet sent or parked by the loop
  bool blocked_ = false;        // a message is parked for want of window
  StreamMetadata initial_md_;   // until the first message or the end goes to the link
  StreamMetadata trailing_md_;  // until the end goes to the link
  std::optional<Promise<ChainBuffer>> read_waiter_;  // an AsyncRead() waiting for a message
  uint64_t read_seq_ = 0;                            // numbers the waiting reads
  std::deque<PendingWrite> write_waiters_;           // AsyncWrite()s waiting for room

  // Loop thread only.
  StreamLink* link_ = nullptr;
  bool flow_control_ = false;                    // (set before the handler starts, read by it too)
  bool count_unread_ = false;                    // (likewise)
  std::shared_ptr<CancelSignal> cancel_signal_;  // (likewise)
  std::deque<ChainBuffer> parked_;
  bool finish_pending_ = false;  // Finish() came while messages were parked
  bool serving_writes_ = false;  // ServeWriteWaiters() is running
  bool initial_sent_ = false;    // the initial metadata went to the link
  TimerId read_timer_ = 0;       // the waiting async read's timeout
  // The stream's idle and total timeouts (ArmTimeouts): 0 = none.
  int64_t idle_ns_ = 0;
  int64_t deadline_ns_ = 0;     // absolute, MonotonicNanos()
  int64_t last_active_ns_ = 0;  // a message came or went (the loop's time)
  int32_t timeout_code_ = 0;
  TimerId life_timer_ = 0;
  void MarkActive() {
    if (idle_ns_ != 0) last_active_ns_ = conn_->reactor()->LoopTimeNs();
  }
  // The life timer fired: ends the stream, or waits again for what is left.
  void CheckTimeouts();
  void ArmLifeTimer(int64_t at_ns);
  Status finish_status_;
  // Loop: hands the initial metadata to the link once, before the first message or the end.
  void SendInitialMetadataOnce();
  // Loop: our side's end to the link, trailers first.
  void FinishOnLink(const Status& status);
};

/// What a stream needs of its connection's stream table, on the loop thread (StreamPath's
/// per-connection part implements it).
class StreamLink {
 public:
  /// False when the window has no room now.
  virtual bool CanSend(uint32_t id) = 0;
  virtual bool SendMessage(uint32_t id, ChainBuffer&& msg, std::string* err) = 0;
  virtual void Consumed(uint32_t id, size_t n) = 0;
  virtual void Finish(StreamCore* core, const Status& status) = 0;
  /// `core` parked a message for want of room in the connection's output (a stream without
  /// flow control): call its OnWritable() again once the output has drained.
  virtual void WatchBacklog(StreamCore* core) = 0;
  /// Metadata for stream `id`'s start (before its first message or its end) and its end (just
  /// before Finish); a protocol without them ignores them.
  virtual void SetInitialMetadata(uint32_t id, StreamMetadata&& md) {
    (void)id;
    (void)md;
  }
  virtual void SetTrailingMetadata(uint32_t id, StreamMetadata&& md) {
    (void)id;
    (void)md;
  }

 protected:
  ~StreamLink() = default;
};

}  // namespace trpc::detail
