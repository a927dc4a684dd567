#pragma once

#include <atomic>
#include <cassert>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "trpc/base/status.h"
#include "trpc/future/future_fwd.h"

namespace trpc::future_detail {

/// What a Future<void> stores: completion carries no value.
struct Unit {};

template <typename T>
using Stored = std::conditional_t<std::is_void_v<T>, Unit, T>;

template <typename T>
struct IsFuture : std::false_type {};
template <typename T>
struct IsFuture<Future<T>> : std::true_type {};

/// The state a Promise and its Future share: one heap allocation per pair, refcounted by both.
/// The result (a value or an error Status) is written once, by the completer, and then
/// published through `flags_`; a consumer installs at most one callback while the state is
/// pending. Both sides do one atomic RMW on `flags_`, so whichever comes second sees the other:
///
///   completer:  write result;          prev = flags_.fetch_or(kResolved)   (acq_rel)
///               if (prev & kSubscribed) run callback
///   subscriber: write cb_, cb_arg_;    prev = flags_.fetch_or(kSubscribed) (acq_rel)
///               if (prev & kResolved) the caller runs the callback itself
///
/// Exactly one of the two runs the callback, exactly once. Memory ordering: the result write
/// is sequenced before the completer's release RMW, and every reader of the result first does
/// an acquire load or RMW of `flags_` that reads kResolved, so the write happens-before the
/// read. Likewise cb_/cb_arg_ are published by the subscriber's release RMW and read only after
/// the completer's acquire RMW has seen kSubscribed.
class StateBase {
 public:
  /// Called once when the state resolves, with the `arg` given to Subscribe() and the state.
  using Callback = void (*)(void* arg, StateBase* src);

  static constexpr uint32_t kResolved = 1;    // a value or an error is there
  static constexpr uint32_t kFailed = 2;      // ... and it is an error
  static constexpr uint32_t kSubscribed = 4;  // cb_ is installed

  StateBase(const StateBase&) = delete;
  StateBase& operator=(const StateBase&) = delete;
  virtual ~StateBase() = default;

  /// Acquire loads: true means the result may be read.
  bool Resolved() const { return (flags_.load(std::memory_order_acquire) & kResolved) != 0; }
  bool Failed() const { return (flags_.load(std::memory_order_acquire) & kFailed) != 0; }
  bool HasValue() const {
    return (flags_.load(std::memory_order_acquire) & (kResolved | kFailed)) == kResolved;
  }

  /// Installs the callback to run when the state resolves. Returns false, without installing
  /// it, if the state has already resolved: the caller then runs it (the result is readable).
  /// At most one callback may be pending per state.
  bool Subscribe(Callback cb, void* arg) {
    // A resolved state keeps a callback slot that its completer may still be reading (the
    // callback may be the one re-subscribing); only a pending state's slot is written.
    if (Resolved()) return false;
    cb_ = cb;
    cb_arg_ = arg;
    uint32_t prev = flags_.fetch_or(kSubscribed, std::memory_order_acq_rel);
    assert((prev & kSubscribed) == 0 && "two callbacks pending on one future");
    return (prev & kResolved) == 0;
  }

  void AddRef() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

 protected:
  StateBase(uint32_t refs, uint32_t flags) : flags_(flags), refs_(refs) {}

  /// Publishes the result the caller has just written and runs the pending callback, if any,
  /// on this thread. `bits` is kResolved, optionally with kFailed.
  void Publish(uint32_t bits) {
    uint32_t prev = flags_.fetch_or(bits, std::memory_order_acq_rel);
    assert((prev & kResolved) == 0 && "a future resolved twice");
    if (prev & kSubscribed) cb_(cb_arg_, this);
  }

  /// For the destructor only: the last Unref() (acq_rel) has ordered every write before it.
  uint32_t FlagsForDestruction() const { return flags_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint32_t> flags_;
  std::atomic<uint32_t> refs_;
  Callback cb_ = nullptr;
  void* cb_arg_ = nullptr;
};

struct ReadyTag {};
struct FailedTag {};

/// A StateBase holding a T (Unit for void) or a Status. The result is read and moved out only
/// by the consumer that owns the state after it resolved, so no lock guards it.
template <typename T>
class State : public StateBase {
 public:
  using ValueType = Stored<T>;

  /// A pending state with `refs` owners (a Promise and its Future: 2).
  explicit State(uint32_t refs) : StateBase(refs, 0) {}
  /// An already-resolved state owned by one Future (MakeReadyFuture, MakeExceptionFuture).
  template <typename... Args>
  explicit State(ReadyTag, Args&&... args) : StateBase(1, kResolved) {
    ::new (static_cast<void*>(&value_)) ValueType(std::forward<Args>(args)...);
  }
  State(FailedTag, Status error) : StateBase(1, kResolved | kFailed) {
    ::new (static_cast<void*>(&error_)) Status(std::move(error));
  }

  ~State() override {
    uint32_t f = FlagsForDestruction();
    if ((f & kResolved) == 0) return;
    if (f & kFailed) {
      error_.~Status();
    } else {
      value_.~ValueType();
    }
  }

  /// Completer side; once per state. Runs the pending callback inline.
  template <typename... Args>
  void SetValue(Args&&... args) {
    EmplaceValue(std::forward<Args>(args)...);
    PublishValue();
  }
  /// SetValue() in two steps, for a Promise: constructing the value may throw, and then
  /// nothing has been published.
  template <typename... Args>
  void EmplaceValue(Args&&... args) {
    ::new (static_cast<void*>(&value_)) ValueType(std::forward<Args>(args)...);
  }
  void PublishValue() { Publish(kResolved); }
  void SetError(Status error) {
    ::new (static_cast<void*>(&error_)) Status(std::move(error));
    Publish(kResolved | kFailed);
  }
  /// Resolves this state with `src`'s result, moved out (src has resolved; nobody else reads it).
  void SetResultFrom(State<T>* src) {
    if (src->Failed()) {
      SetError(std::move(src->Error()));
    } else {
      SetValue(std::move(src->Value()));
    }
  }

  /// Consumer side, after an acquire observation of Resolved()/HasValue()/Failed().
  ValueType& Value() { return value_; }
  Status& Error() { return error_; }

 private:
  union {
    ValueType value_;
    Status error_;
  };
};

/// Future/Promise internals for the detail code (continuations, WhenAll, blocking waits).
struct Access {
  template <typename T>
  static State<T>* GetState(const Future<T>& f) {
    return f.state_;
  }
  /// Takes the state (and its reference) out of `f`, leaving `f` invalid.
  template <typename T>
  static State<T>* Release(Future<T>& f) {
    return std::exchange(f.state_, nullptr);
  }
  /// A Future owning one reference to `s`, which the caller hands over.
  template <typename T>
  static Future<T> Adopt(State<T>* s) {
    return Future<T>(s);
  }
};

}  // namespace trpc::future_detail
