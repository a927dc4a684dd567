#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "trpc/reactor/reactor.h"

namespace trpc {

/// What a BufferBudget needs of a connection it paused: an interface, so that the budget does
/// not depend on Connection (which depends on it). Loop-thread only, like the Slot.
class BudgetedConnection {
 public:
  virtual ~BudgetedConnection() = default;
  /// Still open and still not reading for the budget (nothing else resumed or closed it).
  virtual bool PausedByBudget() const = 0;
  /// The bytes it holds (input not handed over, replies queued).
  virtual size_t BudgetBytes() const = 0;
  virtual void ResumeAfterBudget() = 0;
  /// Closes it with a reset: the peer reads nothing, so a normal close would leave the replies
  /// in the kernel. `why` is for logs.
  virtual void AbortOverBudget(const std::string& why) = 0;
  /// "ip:port" of the peer, for the log line.
  virtual std::string PeerName() const = 0;
};

/// A bound on the bytes that a set of connections (a server's: every service, side services
/// included) holds buffered: input read but not yet handed to a handler, and replies queued but
/// not yet written. Above `limit` a connection holding more than its allowance stops reading:
/// the allowance is its fair share (limit / open connections), and only kStep once the total
/// is 1/8 over the limit (the connections under their share could otherwise add up to another
/// limit's worth while the heavy ones hold theirs). It reads again once the total is back under
/// 3/4 of the limit or its own bytes under half its allowance, and is closed
/// (CloseCause::kOverLimit) if it stays over for `timeout_ms`. After a burst (the total rose past
/// release_high() and fell under a quarter of it) the threads' cached blocks and the allocator's
/// free memory go back to the system.
///
/// How a connection's bytes reach the total: a connection reports its own count to its Slot
/// (one per reactor and owner) when it changed at the end of a read event, of a flush, and
/// every kStep bytes of output queued within a batch; the Slot adds up its connections and
/// passes the change on to the shared total in batches of batch() bytes. So the shared total
/// is written once per batch() bytes of change per reactor, never per request, and lags the
/// truth by at most batch() per Slot.
///
/// Memory-ordering contract (the shared atomics):
///  - total_: written by every Slot's loop thread with relaxed fetch_add (one per batch, so
///    the line is rarely contended); read (relaxed) by loop threads deciding whether to pause,
///    resume or close, by the release timer, and by metrics. It orders nothing: a decision on
///    a stale total is corrected at the next check (the Slot timer, every kCheckIntervalMs), and
///    read-modify-writes keep it exact as the sum of what was passed on.
///  - connections_: relaxed fetch_add/fetch_sub when a connection starts/closes; read relaxed
///    for the fair share. Same reasoning: a heuristic input.
///  - paused_total_, closed_over_limit_, releases_: statistics, relaxed increments (rare
///    events), relaxed loads.
///  - release_armed_: an exchange elects the one loop thread that arms the release timer (on
///    its own reactor); the timer clears it when done. It hands over release_trimmed_: the
///    timer's last write to it comes before its release store of false, and the next arming
///    thread's acquire exchange (possibly on another reactor) sees it.
/// Everything else in a Slot is touched only by its reactor's loop thread. slots_ (the list)
/// is guarded by mu_: changed when an owner adds or drops its slots, read by the release.
/// limit, timeout and the derived marks are set in the constructor and never change.
class BufferBudget : public std::enable_shared_from_this<BufferBudget> {
 public:
  /// Output queued within one batch between two reports to the Slot.
  static constexpr size_t kStep = 256u << 10;

  /// One reactor's share of the accounting. Loop-thread only (of `reactor`), except
  /// ConnectionOpened/ConnectionClosed (atomic counts: a connection may be made or dropped on
  /// another thread).
  class Slot {
   public:
    Reactor* reactor() const { return reactor_; }
    /// A connection started / closed (its bytes must already be back to 0 when it closes).
    void ConnectionOpened();
    void ConnectionClosed();
    /// A connection's buffered bytes changed by `delta`.
    void Add(int64_t delta) {
      bytes_ += delta;
      int64_t unpushed = bytes_ - pushed_;
      if (unpushed >= budget_->batch_ || unpushed <= -budget_->batch_) Push();
    }
    /// `conn` stopped reading for the budget: the slot's timer resumes or closes it.
    void Paused(const std::shared_ptr<BudgetedConnection>& conn);
    /// This slot's bytes (its connections' reports; exact, unlike the shared total).
    int64_t bytes() const { return bytes_; }
    const BufferBudget& budget() const { return *budget_; }
    /// Of bytes(), what the shared total does not hold yet (|unpushed()| < batch()).
    int64_t unpushed() const { return bytes_ - pushed_; }

   private:
    friend class BufferBudget;
    Slot(BufferBudget* budget, Reactor* reactor) : budget_(budget), reactor_(reactor) {}
    void Push();
    void OnTimer();

    BufferBudget* budget_;
    Reactor* reactor_;
    int64_t bytes_ = 0;
    int64_t pushed_ = 0;  // what total_ holds of bytes_
    struct PausedConn {
      std::weak_ptr<BudgetedConnection> conn;
      int64_t since_ns;
    };
    std::vector<PausedConn> paused_;
    TimerId timer_ = 0;
  };

  /// `limit` bytes (>= 1 MiB in configs; any > 0 here), `timeout_ms` > 0.
  BufferBudget(uint64_t limit, int64_t timeout_ms);
  ~BufferBudget();

  /// A slot for connections on `reactor` (control thread, before they start). It lives until
  /// DropSlots(owner) or the budget's end.
  Slot* NewSlot(Reactor* reactor, const void* owner);
  /// The owner's connections are all closed and its reactors may stop: forget its slots.
  void DropSlots(const void* owner);

  uint64_t limit() const { return limit_; }
  int64_t timeout_ms() const { return timeout_ms_; }
  /// Reading resumes once the total falls to this (hysteresis).
  uint64_t resume_mark() const { return limit_ - limit_ / 4; }
  /// A burst past this total is followed by a release of free memory once the total fell to a
  /// quarter of it.
  uint64_t release_high() const { return release_high_; }
  /// The bytes a Slot changes before it updates the shared total.
  int64_t batch() const { return batch_; }

  /// The shared total (lags each Slot by < batch()). Any thread.
  int64_t total() const { return total_.load(std::memory_order_relaxed); }
  bool Over() const { return total() > static_cast<int64_t>(limit_); }
  /// limit / open connections.
  uint64_t FairShare() const {
    uint32_t n = connections_.load(std::memory_order_relaxed);
    return limit_ / (n == 0 ? 1 : n);
  }
  /// What one connection may hold now before it stops reading: no bound while the total is
  /// under the limit, its fair share above, kStep (if less) once the total is 1/8 over.
  /// `as_if_over`: the allowance the total would give if it were over the limit (a paused
  /// connection resumes under half of it, whatever side of the limit the total is on).
  uint64_t Allowance(bool as_if_over = false) const {
    int64_t t = total();
    if (t <= static_cast<int64_t>(limit_) && !as_if_over) return UINT64_MAX;
    uint64_t share = FairShare();
    return t > static_cast<int64_t>(limit_ + limit_ / 8) ? std::min<uint64_t>(share, kStep) : share;
  }
  uint32_t connections() const { return connections_.load(std::memory_order_relaxed); }
  /// Times a connection stopped reading for the budget; connections closed for staying over it;
  /// releases of free memory done.
  uint64_t paused_total() const { return paused_total_.load(std::memory_order_relaxed); }
  uint64_t closed_over_limit() const { return closed_over_limit_.load(std::memory_order_relaxed); }
  uint64_t releases() const { return releases_.load(std::memory_order_relaxed); }

  /// How often a Slot with paused connections looks at them again.
  static constexpr int64_t kCheckIntervalMs = 20;
  /// The release timer's period: also the least time between two releases.
  static constexpr int64_t kReleaseIntervalMs = 1000;

 private:
  void MaybeArmRelease(Reactor* reactor);
  void OnReleaseTimer(Reactor* reactor);

  const uint64_t limit_;
  const int64_t timeout_ms_;
  const int64_t batch_;
  const uint64_t release_high_;

  std::atomic<int64_t> total_{0};
  std::atomic<uint32_t> connections_{0};
  std::atomic<uint64_t> paused_total_{0};
  std::atomic<uint64_t> closed_over_limit_{0};
  std::atomic<uint64_t> releases_{0};
  std::atomic<bool> release_armed_{false};
  // The release timer's state (handed from one arming to the next by release_armed_): the
  // thread caches were trimmed at the last tick, the allocator's release comes at the next (so
  // that it sees what the trims freed).
  bool release_trimmed_ = false;

  std::mutex mu_;
  struct OwnedSlot {
    std::unique_ptr<Slot> slot;
    const void* owner;
  };
  std::vector<OwnedSlot> slots_;                // guarded by mu_
  std::vector<std::unique_ptr<Slot>> dropped_;  // guarded by mu_; kept: connections may point
};

/// The default bound for a machine: a quarter of UsableMemoryBytes(), at least 64 MiB and at
/// most 4 GiB (64 MiB when the memory cannot be read).
uint64_t DefaultBufferLimit();

}  // namespace trpc
