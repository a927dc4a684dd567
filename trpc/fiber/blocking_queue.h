#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "trpc/base/logging.h"
#include "trpc/fiber/condition_variable.h"
#include "trpc/fiber/detail/deadline.h"
#include "trpc/fiber/mutex.h"

namespace trpc::fiber {

/// A bounded FIFO queue between fibers and/or plain threads: Push() blocks while it is full,
/// Pop() while it is empty — a blocked fiber parks, a blocked thread sleeps. Close() ends it:
/// pushes fail from then on, and pops drain what is left and then return nullopt. Any number
/// of producers and consumers; safe from any fiber or thread.
///
/// Memory ordering: everything a producer did before pushing an item happens-before the pop
/// that returns that item (both run under one Mutex). Close() happens-before every push that
/// fails and every pop that returns nullopt because of it.
///
/// Lifetime: destroy only when no call is in progress (after Close(), join the users first).
template <typename T>
class BlockingQueue {
 public:
  /// `capacity` >= 1 items.
  explicit BlockingQueue(size_t capacity) : ring_(capacity) {
    TRPC_CHECK(capacity >= 1, "BlockingQueue needs a capacity of at least 1");
  }
  BlockingQueue(const BlockingQueue&) = delete;
  BlockingQueue& operator=(const BlockingQueue&) = delete;

  /// Queues `item`, waiting while the queue is full. False if the queue is (or becomes) closed;
  /// then `item` is left untouched (an rvalue is not moved from).
  template <typename U = T>
  bool Push(U&& item) {
    return PushImpl(std::forward<U>(item), kBlock);
  }
  /// As Push(), without waiting: false if full or closed.
  template <typename U = T>
  bool TryPush(U&& item) {
    return PushImpl(std::forward<U>(item), kNoWait);
  }
  /// As Push(), waiting at most `timeout` for room.
  template <typename U, typename Rep, typename Period>
  bool PushFor(U&& item, std::chrono::duration<Rep, Period> timeout) {
    return PushImpl(std::forward<U>(item), detail::DeadlineAfter(timeout));
  }

  /// The oldest item, waiting while the queue is empty and open. nullopt once it is closed and
  /// drained.
  std::optional<T> Pop() { return PopImpl(kBlock); }
  /// The oldest item, or nullopt at once if the queue is empty.
  std::optional<T> TryPop() { return PopImpl(kNoWait); }
  /// As Pop(), waiting at most `timeout`; nullopt on timeout or once closed and drained.
  template <typename Rep, typename Period>
  std::optional<T> PopFor(std::chrono::duration<Rep, Period> timeout) {
    return PopImpl(detail::DeadlineAfter(timeout));
  }
  template <typename Clock, typename Duration>
  std::optional<T> PopUntil(std::chrono::time_point<Clock, Duration> deadline) {
    return PopImpl(detail::ToDeadline(deadline));
  }

  /// Closes the queue and wakes every blocked caller. Items already queued can still be popped.
  void Close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  size_t size() const {
    std::lock_guard lock(mu_);
    return size_;
  }
  size_t capacity() const { return ring_.size(); }

 private:
  // Deadline arguments: kBlock waits without limit, kNoWait not at all, >= 0 is a
  // MonotonicNanos() deadline.
  static constexpr int64_t kBlock = -1;
  static constexpr int64_t kNoWait = -2;

  /// Waits on `cv` for `ready()` under `lock`, counting itself in `*waiting` so the other side
  /// knows to notify. False if `ready()` still fails (no waiting allowed, or timed out).
  template <typename Ready>
  bool Await(std::unique_lock<Mutex>& lock, ConditionVariable& cv, size_t* waiting,
             int64_t deadline_ns, Ready ready) {
    if (ready()) return true;
    if (deadline_ns == kNoWait) return false;
    ++*waiting;
    if (deadline_ns == kBlock) {
      cv.wait(lock, ready);
    } else {
      cv.wait_until(lock, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(
                              deadline_ns)),
                    ready);
    }
    --*waiting;
    return ready();
  }

  template <typename U>
  bool PushImpl(U&& item, int64_t deadline_ns) {
    std::unique_lock lock(mu_);
    if (!Await(lock, not_full_, &push_waiting_, deadline_ns,
               [this] { return closed_ || size_ < ring_.size(); }) ||
        closed_) {
      return false;
    }
    size_t tail = head_ + size_;
    if (tail >= ring_.size()) tail -= ring_.size();
    ring_[tail].emplace(std::forward<U>(item));
    ++size_;
    bool wake = pop_waiting_ > 0;
    lock.unlock();
    // After unlocking, so the woken consumer does not block on the mutex straight away.
    if (wake) not_empty_.notify_one();
    return true;
  }

  std::optional<T> PopImpl(int64_t deadline_ns) {
    std::unique_lock lock(mu_);
    if (!Await(lock, not_empty_, &pop_waiting_, deadline_ns,
               [this] { return closed_ || size_ > 0; }) ||
        size_ == 0) {
      return std::nullopt;
    }
    std::optional<T> item(std::move(ring_[head_]));
    ring_[head_].reset();
    if (++head_ == ring_.size()) head_ = 0;
    --size_;
    bool wake = push_waiting_ > 0;
    lock.unlock();
    if (wake) not_full_.notify_one();
    return item;
  }

  mutable Mutex mu_;
  ConditionVariable not_empty_;
  ConditionVariable not_full_;
  // Guarded by mu_:
  std::vector<std::optional<T>> ring_;  // size_ items from head_, wrapping
  size_t head_ = 0;
  size_t size_ = 0;
  size_t push_waiting_ = 0;  // callers blocked in Push*(), so a pop knows to notify
  size_t pop_waiting_ = 0;   // callers blocked in Pop*(), so a push knows to notify
  bool closed_ = false;
};

}  // namespace trpc::fiber
