#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "trpc/base/logging.h"
#include "trpc/base/status.h"
#include "trpc/future/detail/blocking_wait.h"
#include "trpc/future/detail/shared_state.h"
#include "trpc/future/detail/then_state.h"
#include "trpc/future/detail/when_all_state.h"
#include "trpc/future/future_fwd.h"

// Promise<T> / Future<T>: a one-shot result (a T, or an error Status) handed from the code that
// produces it to the code that consumes it, possibly on another thread. docs/future.md has the
// long form; the contract in brief:
//
// Results. A future resolves exactly once, with a value (IsReady()) or an error (IsFailed()),
// the error being a non-OK trpc::Status. A promise destroyed before it was set resolves its
// future with ret kUnknownErr and the message kBrokenPromiseMessage. T may be void (Future<>).
//
// Continuations. Then(f) runs f exactly once, inline on the thread that resolves the future
// (inside its Promise::Set*() call), or at once on the calling thread if the future has already
// resolved. Nothing is queued or scheduled: keep continuations short, and post to a reactor or
// start a fiber for long work. Chains resolved in one go run recursively, one level per Then().
//
// Blocking. BlockingGet()/BlockingTryGet() park the calling fiber (its worker runs other fibers
// meanwhile) or, on a plain thread, block it on a futex. Never call them on a reactor's loop
// thread (merge model) nor on a fiber worker outside a fiber: that would block the loop.
//
// Threads. A Promise and its Future may be used concurrently from two threads (set on one while
// Then()/BlockingGet() on the other): the pair shares a refcounted state with one atomic flags
// word. Each object itself is used by one thread at a time, like any value type.
//
// Memory ordering. Everything the completing thread did before SetValue()/SetException()
// (including writing the value) happens-before the continuation runs, before an IsResolved()/
// IsReady()/IsFailed() that returns true, and before BlockingGet()/BlockingTryGet() return it.
// Everything done before Then(f) happens-before f runs.

namespace trpc {

/// The message of the error a broken promise leaves (with ret kUnknownErr).
inline constexpr std::string_view kBrokenPromiseMessage = "broken promise";

/// The consumer's end: holds the result once it is there. Move-only; consumed by Then() and
/// the blocking getters. A default-constructed or moved-from future is invalid (Valid() false,
/// and the Is*() queries too) and may only be queried, assigned to or destroyed.
template <typename T>
class Future {
 public:
  static_assert(!std::is_reference_v<T>, "Future<T&> is not supported; use a pointer");
  using ValueType = T;

  Future() = default;
  Future(Future&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  Future& operator=(Future&& other) noexcept {
    if (this != &other) {
      Reset();
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  Future(const Future&) = delete;
  Future& operator=(const Future&) = delete;
  ~Future() { Reset(); }

  bool Valid() const { return state_ != nullptr; }
  /// Resolved, with a value or an error. Never blocks.
  bool IsResolved() const { return state_ != nullptr && state_->Resolved(); }
  /// Resolved with a value (tRPC-Cpp's meaning of "ready").
  bool IsReady() const { return state_ != nullptr && state_->HasValue(); }
  /// Resolved with an error.
  bool IsFailed() const { return state_ != nullptr && state_->Failed(); }

  /// Moves the value out; once. Requires IsReady() (checked: aborts otherwise).
  T GetValue() {
    TRPC_CHECK(IsReady(), "GetValue() on a Future without a value (check IsReady() first)");
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      return std::move(state_->Value());
    }
  }
  /// tRPC-Cpp's name for GetValue().
  T GetValue0() { return GetValue(); }
  /// The error. Requires IsFailed() (checked: aborts otherwise).
  const Status& GetException() const {
    TRPC_CHECK(IsFailed(), "GetException() on a Future without an error");
    return state_->Error();
  }

  /// Runs `f` once this future resolves (see the file comment for on which thread) and
  /// returns a future of what `f` returns. `f` takes either
  ///  - Future<T>&& (by value or rvalue reference; also a generic lambda): it gets the resolved
  ///    future and sees values and errors alike; or
  ///  - T (F() for Future<void>), by value, T&& or const T&: it runs only on a value; an error
  ///    skips it and resolves the returned future with the same Status.
  /// `f` may return U (Future<U>), void (Future<void>) or Future<U> (Future<U>, resolved when
  /// that one resolves: flattened). If `f` throws, the returned future fails with ret
  /// kUnknownErr and the exception's message. `f` is destroyed right after it has run.
  /// Consumes this future; it must be valid.
  template <typename F>
  auto Then(F&& f) && {
    using Cont = future_detail::ThenState<T, std::decay_t<F>>;
    TRPC_CHECK(state_ != nullptr, "Then() on an invalid Future");
    auto* next = new Cont(std::forward<F>(f));
    Future<typename future_detail::ThenTraits<T, std::decay_t<F>>::Result> out(next);
    future_detail::State<T>* src = std::exchange(state_, nullptr);
    if (!src->Subscribe(&Cont::Run, next)) Cont::Run(next, src);
    src->Unref();  // if subscribed, the promise keeps it alive while the continuation runs
    return out;
  }

 private:
  friend struct future_detail::Access;
  template <typename U>
  friend class Future;

  explicit Future(future_detail::State<T>* state) : state_(state) {}
  void Reset() {
    if (state_ != nullptr) std::exchange(state_, nullptr)->Unref();
  }

  future_detail::State<T>* state_ = nullptr;
};

/// The producer's end: resolves its future once, with SetValue() or SetException(). Move-only.
/// Destroying a promise that was not set resolves its future with a broken-promise error, so a
/// continuation always runs. One thread at a time per Promise object (see the file comment).
template <typename T>
class Promise {
 public:
  static_assert(!std::is_reference_v<T>, "Promise<T&> is not supported; use a pointer");

  /// Allocates the shared state (the only allocation of the pair).
  Promise() : state_(new future_detail::State<T>(2)) {}
  Promise(Promise&& other) noexcept
      : state_(std::exchange(other.state_, nullptr)),
        future_retrieved_(other.future_retrieved_),
        satisfied_(other.satisfied_) {}
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      Reset();
      state_ = std::exchange(other.state_, nullptr);
      future_retrieved_ = other.future_retrieved_;
      satisfied_ = other.satisfied_;
    }
    return *this;
  }
  Promise(const Promise&) = delete;
  Promise& operator=(const Promise&) = delete;
  ~Promise() { Reset(); }

  /// The future of this promise; once, before or after it is set.
  Future<T> GetFuture() {
    TRPC_CHECK(state_ != nullptr && !future_retrieved_, "GetFuture() called twice");
    future_retrieved_ = true;
    return future_detail::Access::Adopt(state_);  // the reference the constructor reserved
  }

  /// Resolves the future with a value and runs its continuation, if any, on this thread before
  /// returning. Once per promise (checked). If copying or moving the value throws, the promise
  /// stays unset.
  void SetValue(const future_detail::Stored<T>& value)
    requires(!std::is_void_v<T>)
  {
    CheckSettable();
    state_->EmplaceValue(value);
    satisfied_ = true;
    state_->PublishValue();
  }
  void SetValue(future_detail::Stored<T>&& value)
    requires(!std::is_void_v<T>)
  {
    CheckSettable();
    state_->EmplaceValue(std::move(value));
    satisfied_ = true;
    state_->PublishValue();
  }
  void SetValue()
    requires std::is_void_v<T>
  {
    CheckSettable();
    satisfied_ = true;
    state_->SetValue();
  }
  /// Resolves the future with an error, as SetValue() does with a value. An OK status is not an
  /// error: it is replaced by ret kUnknownErr, so a failed future always reports !OK().
  void SetException(Status error) {
    CheckSettable();
    if (error.OK()) error = Status(kUnknownErr, "SetException() with an OK status");
    satisfied_ = true;
    state_->SetError(std::move(error));
  }

  /// False once moved from.
  bool Valid() const { return state_ != nullptr; }

 private:
  void CheckSettable() const {
    TRPC_CHECK(state_ != nullptr && !satisfied_, "a Promise set twice (or moved from)");
  }
  void Reset() {
    if (state_ == nullptr) return;
    if (!future_retrieved_) {
      state_->Unref();  // nobody can see the result: no need to break anything
    } else if (!satisfied_) {
      state_->SetError(Status(kUnknownErr, std::string(kBrokenPromiseMessage)));
    }
    std::exchange(state_, nullptr)->Unref();
  }

  future_detail::State<T>* state_;
  bool future_retrieved_ = false;
  bool satisfied_ = false;
};

namespace future_detail {
struct Deduce {};
template <typename T, typename... Args>
struct ReadyType {
  using type = T;
};
template <>
struct ReadyType<Deduce> {
  using type = void;
};
template <typename A>
struct ReadyType<Deduce, A> {
  using type = std::decay_t<A>;
};
template <typename A, typename B, typename... Rest>
struct ReadyType<Deduce, A, B, Rest...> {
  static_assert(sizeof(A) == 0, "MakeReadyFuture(a, b, ...) needs the type: MakeReadyFuture<T>");
};
}  // namespace future_detail

/// A future that already holds a value: MakeReadyFuture(42) is a Future<int>, MakeReadyFuture()
/// (or MakeReadyFuture<>()) a Future<void>, MakeReadyFuture<T>(args...) constructs a T in place.
template <typename T = future_detail::Deduce, typename... Args>
Future<typename future_detail::ReadyType<T, Args...>::type> MakeReadyFuture(Args&&... args) {
  using V = typename future_detail::ReadyType<T, Args...>::type;
  return future_detail::Access::Adopt(
      new future_detail::State<V>(future_detail::ReadyTag{}, std::forward<Args>(args)...));
}

/// A future that already holds an error (an OK status becomes ret kUnknownErr, as in
/// Promise::SetException()).
template <typename T = void>
Future<T> MakeExceptionFuture(Status error) {
  if (error.OK()) error = Status(kUnknownErr, "MakeExceptionFuture() with an OK status");
  return future_detail::Access::Adopt(
      new future_detail::State<T>(future_detail::FailedTag{}, std::move(error)));
}

/// Resolves once every input has resolved, with the inputs themselves, each resolved with its
/// value or its error (as in tRPC-Cpp; check each with IsReady()/IsFailed()). The result itself
/// never fails. An empty input resolves at once. The last input to resolve runs the
/// continuation of the result, on its thread. The inputs must be valid.
template <typename T>
Future<std::vector<Future<T>>> WhenAll(std::vector<Future<T>> futures) {
  using Inputs = std::vector<Future<T>>;
  for (const auto& f : futures) TRPC_CHECK(f.Valid(), "WhenAll() given an invalid Future");
  size_t n = futures.size();
  auto* state = new future_detail::WhenAllState<Inputs>(std::move(futures), n);
  auto out = future_detail::Access::Adopt<Inputs>(state);
  state->Start();
  return out;
}

/// As WhenAll(vector), moving the futures out of [first, last) (tRPC-Cpp's form).
template <typename It>
  requires std::input_iterator<It>
auto WhenAll(It first, It last) {
  using F = typename std::iterator_traits<It>::value_type;
  std::vector<F> futures(std::make_move_iterator(first), std::make_move_iterator(last));
  return WhenAll(std::move(futures));
}

/// As WhenAll(vector), for futures of different types: a Future<std::tuple<Future<Ts>...>>.
template <typename... Ts>
Future<std::tuple<Future<Ts>...>> WhenAll(Future<Ts>&&... futures) {
  using Inputs = std::tuple<Future<Ts>...>;
  bool all_valid = (futures.Valid() && ...);
  TRPC_CHECK(all_valid, "WhenAll() given an invalid Future");
  auto* state =
      new future_detail::WhenAllState<Inputs>(Inputs(std::move(futures)...), sizeof...(Ts));
  auto out = future_detail::Access::Adopt<Inputs>(state);
  state->Start();
  return out;
}

/// Waits until `f` resolves and returns it (then IsReady() or IsFailed()). Parks the calling
/// fiber, or blocks a plain thread. `f` must be valid and have no Then() pending.
template <typename T>
Future<T> BlockingGet(Future<T>&& f) {
  TRPC_CHECK(f.Valid(), "BlockingGet() on an invalid Future");
  future_detail::WaitResolved(future_detail::Access::GetState(f), -1);
  return std::move(f);
}

/// As BlockingGet(), giving up after `timeout`: then std::nullopt, and the result, when it
/// comes, is dropped. `f` is consumed either way. A timeout <= 0 only checks.
template <typename T, typename Rep, typename Period>
std::optional<Future<T>> BlockingTryGet(Future<T>&& f, std::chrono::duration<Rep, Period> timeout) {
  TRPC_CHECK(f.Valid(), "BlockingTryGet() on an invalid Future");
  Future<T> owned = std::move(f);
  int64_t deadline_ns = -1;  // beyond 100 years: no deadline (and no overflow)
  if (timeout <= timeout.zero()) {
    deadline_ns = 0;
  } else if (timeout < std::chrono::hours(24 * 365 * 100)) {
    deadline_ns = future_detail::DeadlineAfter(
        std::chrono::ceil<std::chrono::nanoseconds>(timeout).count());
  }
  if (!future_detail::WaitResolved(future_detail::Access::GetState(owned), deadline_ns)) {
    return std::nullopt;
  }
  return std::optional<Future<T>>(std::move(owned));
}

/// BlockingTryGet() with the timeout in milliseconds (tRPC-Cpp's form).
template <typename T>
std::optional<Future<T>> BlockingTryGet(Future<T>&& f, uint32_t timeout_ms) {
  return BlockingTryGet(std::move(f), std::chrono::milliseconds(timeout_ms));
}

/// tRPC-Cpp spells the blocking getters trpc::future::BlockingGet; both names work.
namespace future {
using ::trpc::BlockingGet;
using ::trpc::BlockingTryGet;
}  // namespace future

}  // namespace trpc
