#include "trpc/transport/buffer_budget.h"

#include <algorithm>

#include "trpc/base/clock.h"
#include "trpc/base/detail/memory.h"
#include "trpc/base/logging.h"

namespace trpc {

namespace {
constexpr uint64_t kMiB = 1u << 20;
}  // namespace

uint64_t DefaultBufferLimit() {
  uint64_t usable = UsableMemoryBytes();
  if (usable == 0) return 64 * kMiB;
  return std::clamp<uint64_t>(usable / 4, 64 * kMiB, 4096 * kMiB);
}

BufferBudget::BufferBudget(uint64_t limit, int64_t timeout_ms)
    : limit_(limit),
      timeout_ms_(timeout_ms),
      // Small enough that the slots' lag (batch x slots) stays a small part of the limit, large
      // enough that request/response traffic never reaches it.
      batch_(static_cast<int64_t>(std::clamp<uint64_t>(limit / 64, 4096, 64u << 10))),
      release_high_(std::clamp<uint64_t>(limit / 8, 1 * kMiB, 64 * kMiB)) {}

BufferBudget::~BufferBudget() = default;

BufferBudget::Slot* BufferBudget::NewSlot(Reactor* reactor, const void* owner) {
  std::lock_guard lock(mu_);
  slots_.push_back(OwnedSlot{std::unique_ptr<Slot>(new Slot(this, reactor)), owner});
  return slots_.back().slot.get();
}

void BufferBudget::DropSlots(const void* owner) {
  std::lock_guard lock(mu_);
  for (auto it = slots_.begin(); it != slots_.end();) {
    if (it->owner == owner) {
      dropped_.push_back(std::move(it->slot));
      it = slots_.erase(it);
    } else {
      ++it;
    }
  }
}

void BufferBudget::Slot::ConnectionOpened() {
  budget_->connections_.fetch_add(1, std::memory_order_relaxed);
}

void BufferBudget::Slot::ConnectionClosed() {
  budget_->connections_.fetch_sub(1, std::memory_order_relaxed);
}

void BufferBudget::Slot::Push() {
  int64_t delta = bytes_ - pushed_;
  pushed_ = bytes_;
  int64_t total = budget_->total_.fetch_add(delta, std::memory_order_relaxed) + delta;
  if (delta > 0 && total >= static_cast<int64_t>(budget_->release_high_)) {
    budget_->MaybeArmRelease(reactor_);
  }
}

void BufferBudget::Slot::Paused(const std::shared_ptr<BudgetedConnection>& conn) {
  budget_->paused_total_.fetch_add(1, std::memory_order_relaxed);
  paused_.push_back(PausedConn{conn, reactor_->LoopTimeNs()});
  if (timer_ != 0) return;
  // The budget outlives its slots' timers only if someone still holds it: a timer that fires
  // after the server is gone does nothing.
  std::weak_ptr<BufferBudget> weak = budget_->weak_from_this();
  timer_ =
      reactor_->AddTimer(reactor_->LoopTimeNs() + kCheckIntervalMs * kNanosPerMilli, [weak, this] {
        if (auto budget = weak.lock()) OnTimer();
      });
}

void BufferBudget::Slot::OnTimer() {
  timer_ = 0;
  const int64_t now = reactor_->LoopTimeNs();
  const bool total_low = budget_->total() <= static_cast<int64_t>(budget_->resume_mark());
  const uint64_t allowance = budget_->Allowance(/*as_if_over=*/true);
  // Swap out: resuming or closing a connection may call back into Paused() (a resumed
  // connection that at once grows over its share again).
  std::vector<PausedConn> list;
  list.swap(paused_);
  std::vector<PausedConn> keep;
  for (PausedConn& p : list) {
    std::shared_ptr<BudgetedConnection> conn = p.conn.lock();
    if (conn == nullptr || !conn->PausedByBudget()) continue;
    if (total_low || conn->BudgetBytes() <= allowance / 2) {
      conn->ResumeAfterBudget();
    } else if (now - p.since_ns >= budget_->timeout_ms_ * kNanosPerMilli) {
      budget_->closed_over_limit_.fetch_add(1, std::memory_order_relaxed);
      TRPC_LOG_EVERY_MS(log::Level::kWarn, 1000,
                        "closing connection from {}: holds {} buffered bytes (allowance {}, "
                        "process total {}, limit {}), reading paused for more than {} ms",
                        conn->PeerName(), conn->BudgetBytes(), allowance, budget_->total(),
                        budget_->limit_, budget_->timeout_ms_);
      conn->AbortOverBudget("over the process's buffer limit for too long");
    } else {
      keep.push_back(std::move(p));
    }
  }
  // Connections paused while this ran are in paused_ already.
  for (PausedConn& p : keep) paused_.push_back(std::move(p));
  if (paused_.empty() || timer_ != 0) return;
  std::weak_ptr<BufferBudget> weak = budget_->weak_from_this();
  timer_ = reactor_->AddTimer(now + kCheckIntervalMs * kNanosPerMilli, [weak, this] {
    if (auto budget = weak.lock()) OnTimer();
  });
}

void BufferBudget::MaybeArmRelease(Reactor* reactor) {
  // (The relaxed load keeps the common case, already armed, a plain read of a shared line.)
  if (release_armed_.load(std::memory_order_relaxed) ||
      release_armed_.exchange(true, std::memory_order_acquire)) {
    return;
  }
  // The timer lives on this reactor: if it stops first (a side service's), no release runs again
  // in this budget's life; the configured services' reactors live as long as the server.
  std::weak_ptr<BufferBudget> weak = weak_from_this();
  reactor->AddTimer(reactor->LoopTimeNs() + kReleaseIntervalMs * kNanosPerMilli, [weak, reactor] {
    if (auto budget = weak.lock()) budget->OnReleaseTimer(reactor);
  });
}

void BufferBudget::OnReleaseTimer(Reactor* reactor) {
  // Two ticks: first every reactor thread frees its cached blocks and thread cache (memory is
  // per thread, so only that thread can), then the allocator returns its free pages, including
  // what the trims freed.
  if (release_trimmed_) {
    release_trimmed_ = false;
    ReleaseFreeMemory();
    releases_.fetch_add(1, std::memory_order_relaxed);
    release_armed_.store(false, std::memory_order_release);
    // A new burst that began meanwhile re-arms at its next batch.
    return;
  }
  if (total() <= static_cast<int64_t>(release_high_ / 4)) {
    std::vector<Reactor*> reactors;
    {
      std::lock_guard lock(mu_);
      for (const OwnedSlot& s : slots_) {
        if (std::find(reactors.begin(), reactors.end(), s.slot->reactor()) == reactors.end()) {
          reactors.push_back(s.slot->reactor());
        }
      }
    }
    for (Reactor* r : reactors) r->RunInLoop([] { ReleaseThreadCaches(); });
    release_trimmed_ = true;
  }
  std::weak_ptr<BufferBudget> weak = weak_from_this();
  reactor->AddTimer(reactor->LoopTimeNs() + kReleaseIntervalMs * kNanosPerMilli, [weak, reactor] {
    if (auto budget = weak.lock()) budget->OnReleaseTimer(reactor);
  });
}

}  // namespace trpc
