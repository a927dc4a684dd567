#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/trpc_bench/coordinator.h"
#include "benchmark/trpc_bench/load_stats.h"
#include "benchmark/trpc_bench/options.h"
#include "benchmark/trpc_bench/share_gate.h"
#include "examples/helloworld/helloworld.pb.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/future/future.h"
#include "trpc/reactor/reactor.h"
#include "trpc/transport/client_connection.h"
#include "trpc/transport/detail/stream_core.h"

namespace trpc::bench {

/// The timeline every worker follows, in MonotonicNanos().
struct Schedule {
  int64_t start_ns = 0;          // warm-up starts; open-loop request k is due at start + k/qps
  int64_t measure_start_ns = 0;  // warm-up ends
  int64_t measure_end_ns = 0;    // INT64_MAX without --duration
};

/// One load thread: owns a reactor, its share of the connections and, in the open loop, its
/// share of the plan (the global requests k = index, index + threads, ...; so all threads
/// together follow the plan start + k/qps exactly).
///
/// With --hot-share F the first connection of thread 0 is the hot one, with --hot-inflight
/// slots. Open loop: it has a plan of its own, at F x qps (every call of it on the hot
/// connection), and the other connections share the plan of the rest, at (1 - F) x qps, as
/// above; so the hot connection carries F of the calls whatever the server does. Closed loop:
/// a ShareGate shared by the threads makes the side that runs ahead of the share wait.
///
/// Each connection has `inflight` slots; a slot is one call in flight at most, with its request
/// frames (plain and tagged) encoded once with a request id of its own, so a send is a buffer
/// clone (no encoding, no allocation here). A slot whose call timed out takes a fresh id (the
/// late reply of the old one is then ignored by ClientConnection).
///
/// Over HTTP/1.1 (--protocol http) the requests carry no id: every slot sends the same bytes,
/// ClientConnection matches responses in order (so `inflight` slots of a connection are a
/// pipeline of that depth), and a reply is checked by its status code alone.
///
/// With --stream a slot is one bidirectional stream (--streams-per-connection of them per
/// connection), opened through the connection's ClientStreams on this thread's reactor and
/// driven with StreamCore's futures, never blocking: a send writes the message (encoded once
/// per worker), and the stream's echoes, read one at a time in order, complete its messages
/// in the order they were sent. Closed loop: each stream has one message in flight, and the
/// echo sends the next. Open loop: each due message goes out at once on the next stream in
/// turn (round robin over the open streams), whatever that stream has in flight (at most
/// kMaxStreamInflight; a message that finds every stream closed or full waits, as a request
/// waits for a free slot). A stream whose message fails (its oldest echo is --timeout late,
/// the stream ends or is reset, the connection is lost) is dropped, failing every message it
/// had in flight, and opened again after a pause; a refused open is counted apart
/// (LoadStats::open_failures) and tried again after the same pause.
///
/// Closed loop: a slot sends again as soon as its call completes. Open loop: a pacing timer at
/// the next request's intended time sends every request that is due on a free slot; when every
/// slot is busy, due requests wait (in order) for completions, and their latency still counts
/// from their intended time. A due request whose deadline (--timeout after its intended time)
/// has passed is not sent: it is recorded as expired, a timeout. An OK reply counts as good
/// only within that deadline, else as late.
///
/// Thread contract: Run() on the worker's own thread; Start/SnapshotInterval/Stop from any
/// thread (they post to the reactor); stats() only after Run() has returned.
class Worker {
 public:
  /// The HTTP request of --protocol http (tagged: with the X-Trpc-Bench-Tail header carrying
  /// `tail_value`). False if the codec refuses it.
  static bool EncodeHttpRequest(const Options& o, ClientCodec* codec, const std::string* tail_value,
                                ChainBuffer* out);

  /// `quota`: measured requests of the thread's share of the plan at most; `hot_quota`: of the
  /// hot connection's plan (thread 0 with --hot-share only). `gate`: the closed loop's share
  /// gate with --hot-share, else null.
  Worker(const Options& o, int index, int connections, uint64_t quota, uint64_t hot_quota,
         std::shared_ptr<ClientCodec> codec, Coordinator* coordinator, ShareGate* gate);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  /// The thread body: pins the thread, connects, reports ready, runs until Stop().
  void Run();
  /// Begins the load on schedule `s`.
  void Start(const Schedule& s);
  /// Reports the progress interval to the coordinator as round `round` and starts a new one.
  void SnapshotInterval(int round);
  /// Closes the connections and ends Run(). Calls still in flight are not recorded.
  void Stop();
  /// The share gate let this thread's side go again: retries its parked slots. Any thread.
  void WakeParked();

  const LoadStats& stats() const { return stats_; }

 private:
  struct Conn;
  struct Slot;
  enum class StreamState { kClosed, kOpening, kReady };
  // --stream: one message on its way (the times as a call's, below).
  struct InFlight {
    int64_t intended_ns = 0;
    int64_t sent_ns = 0;
    bool measured = false;
  };
  // A sequence of requests and the slots that carry them. Open loop: request k of the plan is
  // due at start + k * period_ns, and this thread sends k = offset, offset + stride, ...; a
  // slot that is free waits in the ring. Closed loop: the ring holds the slots the share gate
  // parked.
  struct Plan {
    bool hot = false;
    double period_ns = 0;
    int offset = 0;
    int stride = 1;
    uint64_t quota = UINT64_MAX;  // measured requests at most
    uint64_t measured_sent = 0;
    uint64_t next_j = 0;             // the next request of the plan (open loop)
    uint64_t waited_j = UINT64_MAX;  // the last request counted in slot_waits
    bool sending = false;            // started and not yet stopped
    bool stalled = false;            // --stream, open loop: the next request waits for a stream
    TimerId pacer = 0;
    std::vector<Slot*> free;  // ring of free (open loop) or parked (closed loop) slots
    size_t free_head = 0;
    size_t free_count = 0;
  };
  struct Slot {
    Conn* conn = nullptr;
    uint32_t id = 0;
    ChainBuffer frame;        // the request, encoded with `id`
    ChainBuffer tail_frame;   // the same with the tail tag (only with --tail-ratio)
    std::string ok_reply[2];  // the last successful reply (plain, tagged); see CheckReply()
    int64_t intended_ns = 0;
    int64_t sent_ns = 0;
    bool busy = false;     // a call is in flight
    bool queued = false;   // in the free ring (open loop)
    bool in_call = false;  // inside ClientConnection::Call (a failure there is synchronous)
    bool tagged = false;
    bool measured = false;
    // --stream: the slot's stream, null until opened (or after it was dropped). `stream_gen`
    // counts the streams the slot has had: a continuation of a dropped one sees it changed.
    std::shared_ptr<detail::StreamCore> stream;
    StreamState stream_state = StreamState::kClosed;
    uint32_t stream_gen = 0;
    bool reopen_scheduled = false;
    bool reading = false;  // ReadEchoes() runs, or a read it began is pending
    // Its messages whose echo has not come yet, oldest first (`busy` while there are any).
    std::deque<InFlight> inflight;
  };
  struct Conn {
    ClientConnectionPtr client;
    uint32_t next_id = 0;
    size_t first_slot = 0;  // its slots are slots_[first_slot, first_slot + slot_count)
    int slot_count = 0;
    Plan* plan = nullptr;
    int busy = 0;
    bool reconnect_scheduled = false;
  };
  enum class Phase { kConnected, kRunning, kDraining, kFinished, kStopped };

  void Setup();
  bool CheckHttpReply(const ChainBuffer& frame, std::string* code);
  bool Connect(Conn* c);
  void EncodeSlot(Slot* s);
  void StartInLoop(const Schedule& s);
  int64_t Intended(const Plan& p, uint64_t j) const;

  void SendDue(Plan* p);  // open loop
  // closed loop; `now_ns`: a fresh clock reading, or 0 to take one
  void SendNext(Slot* s, int64_t now_ns = 0);
  void Send(Slot* s, int64_t intended_ns, bool measured, int64_t now_ns);
  void OnDone(Slot* s, Status status, ChainBuffer&& frame);
  /// True if the reply is a success; else `*code` says why (ret code, func_ret, decode error;
  /// http: "http:<status>").
  bool CheckReply(Slot* s, ChainBuffer&& frame, std::string* code);
  void Record(const Slot& s, bool ok, const std::string& code, int64_t now_ns);
  /// A request of the plan whose deadline passed before it could be sent: a timeout (101).
  void RecordExpired(const Plan& p, bool measured, int64_t now_ns);
  void Release(Slot* s, int64_t now_ns = 0);
  void PushFree(Slot* s);
  Slot* PopFree(Plan* p);
  void RetryParked(Plan* p);
  void ArmPacer(Plan* p, int64_t deadline_ns);
  // Ends the sending of every plan, or of one.
  void StopSending(bool window_ended);
  void StopPlan(Plan* p, bool window_ended);
  void MaybeFinish();
  void ScheduleReconnect(Conn* c);
  void Reconnect(Conn* c);

  // --stream.
  /// Opens `s`'s stream; true when it is usable at once (gRPC), else its answer calls
  /// Release(s) (or counts a refusal and schedules another try).
  bool OpenStream(Slot* s);
  void OnStreamOpened(Slot* s, uint32_t gen, const Status& status);
  /// Open loop: the next open stream in turn with room for another message, or null.
  Slot* NextStream();
  /// Writes the message on `s`'s stream (the call's bookkeeping done) and reads its echo.
  void SendOnStream(Slot* s, int64_t intended_ns, bool measured, int64_t now_ns);
  /// Reads `s`'s echoes while it has messages in flight, one read at a time: those already
  /// there in a loop, then through a continuation that comes back here.
  void ReadEchoes(Slot* s);
  /// The oldest message in flight on `s` got `echo` (or the read failed).
  void OnEcho(Slot* s, Future<ChainBuffer>&& echo);
  bool CheckEcho(const ChainBuffer& echo, std::string* code);
  /// Records the oldest message in flight on `s` as done.
  void CompleteOldest(Slot* s, bool ok, const std::string& code, int64_t now_ns);
  /// The stream failed with `status`: every message in flight on it fails with its code, the
  /// stream is reset and dropped, and opened again after a pause.
  void DropStream(Slot* s, const Status& status, int64_t now_ns);
  void ForgetStream(Slot* s);
  void ScheduleReopen(Slot* s);
  /// Fails the streams whose oldest echo is --timeout late (a stream's echoes come in order,
  /// so a late one cannot be told from the next: the stream is dropped).
  void SweepTimeouts();

  const Options& o_;
  const int index_;
  const int connection_count_;
  std::shared_ptr<ClientCodec> codec_;
  Coordinator* coordinator_;
  ShareGate* gate_;
  NetAddress target_;
  RpcRequest header_;  // the request header, reused for every encoding
  test::helloworld::HelloRequest body_;
  std::string tail_value_;  // "sleep:<us>" or "spin:<us>"
  // http: the request, plain and tagged, encoded once (no ids: every slot sends these).
  ChainBuffer http_frame_;
  ChainBuffer http_tail_frame_;
  // --stream: the message every stream sends (body_ serialized), and its bytes to recognize an
  // exact echo without a parse.
  ChainBuffer stream_msg_;
  std::string stream_msg_bytes_;
  TimerId sweep_timer_ = 0;
  size_t next_stream_ = 0;  // open loop: where NextStream() looks first

  Reactor reactor_;
  std::vector<Conn> conns_;
  std::vector<Slot> slots_;
  Plan plan_;      // the calls of every connection but the hot one
  Plan hot_plan_;  // the hot connection's (thread 0 with --hot-share)
  const bool has_hot_;

  Phase phase_ = Phase::kConnected;
  Schedule schedule_;
  int64_t deadline_ns_ = 0;  // the caller's deadline: --timeout from the intended time
  uint64_t sends_ = 0;       // every send, warm-up included (picks the tagged ones)
  int busy_ = 0;             // slots with a call in flight
  int64_t last_done_ns_ = 0;

  LoadStats stats_;
  IntervalStats interval_;
};

}  // namespace trpc::bench
