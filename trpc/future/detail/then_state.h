#pragma once

#include <functional>
#include <optional>
#include <type_traits>
#include <utility>

#include "trpc/base/status.h"
#include "trpc/future/detail/shared_state.h"
#include "trpc/future/future_fwd.h"

namespace trpc::future_detail {

/// The error a continuation that threw resolves its future with (the current exception's
/// what(), if it is a std::exception). Call only inside a catch block.
Status CurrentExceptionStatus();

/// How Future<T>::Then(F) calls F, and what it returns. F is the decayed callable, called once
/// as an rvalue.
template <typename T, typename F>
struct ThenTraits {
  /// F(Future<T>&&): called with the resolved future, value or error.
  static constexpr bool kTakesFuture = std::is_invocable_v<F, Future<T>&&>;
  /// F(T) (F() for void): called only with a value; an error skips F and is passed on.
  static constexpr bool kTakesValue = [] {
    if constexpr (std::is_void_v<T>) {
      return std::is_invocable_v<F>;
    } else {
      return std::is_invocable_v<F, T&&>;
    }
  }();
  static_assert(kTakesFuture || kTakesValue,
                "Then(f): f must be callable with Future<T>&& or with T (with nothing if T is "
                "void)");

  static auto RetHelper() {
    if constexpr (kTakesFuture) {
      return std::type_identity<std::invoke_result_t<F, Future<T>&&>>{};
    } else if constexpr (std::is_void_v<T>) {
      return std::type_identity<std::invoke_result_t<F>>{};
    } else {
      return std::type_identity<std::invoke_result_t<F, T&&>>{};
    }
  }
  /// What F returns (decayed).
  using Ret = std::remove_cvref_t<typename decltype(RetHelper())::type>;

  template <typename R>
  struct Unwrap {
    using type = R;
  };
  template <typename U>
  struct Unwrap<Future<U>> {
    using type = U;
  };
  /// The value type of the future Then() returns: F's return type, or U if F returns Future<U>.
  using Result = typename Unwrap<Ret>::type;
};

/// The shared state of the future Then() returns, which also holds F: one allocation per
/// Then(). Owned by that future and, until it resolves, by the pending continuation (refs 2).
/// Run() is the callback subscribed to the source state; if F returns a Future<U>, Forward()
/// is then subscribed to that future's state, and this state resolves with its result.
/// F is destroyed right after it runs, before anything downstream runs.
template <typename T, typename F>
class ThenState final : public State<typename ThenTraits<T, F>::Result> {
  using Traits = ThenTraits<T, F>;
  using Ret = typename Traits::Ret;
  using Result = typename Traits::Result;

 public:
  template <typename G>
  explicit ThenState(G&& f) : State<Result>(2), f_(std::forward<G>(f)) {}

  /// A StateBase::Callback: `src` (a State<T>) has resolved and stays alive during the call.
  static void Run(void* arg, StateBase* src) {
    static_cast<ThenState*>(arg)->Invoke(static_cast<State<T>*>(src));
  }

 private:
  void Invoke(State<T>* src) {
    if constexpr (!Traits::kTakesFuture) {
      if (src->Failed()) {
        f_.reset();
        this->SetError(std::move(src->Error()));
        this->Unref();
        return;
      }
    }
    if constexpr (std::is_void_v<Ret>) {
      std::optional<Status> error;
      try {
        Call(src);
      } catch (...) {
        error = CurrentExceptionStatus();
      }
      f_.reset();
      if (error) {
        this->SetError(std::move(*error));
      } else {
        this->SetValue();
      }
    } else {
      std::optional<Ret> ret;
      std::optional<Status> error;
      try {
        ret.emplace(Call(src));
      } catch (...) {
        error = CurrentExceptionStatus();
      }
      f_.reset();
      if (error) {
        this->SetError(std::move(*error));
      } else if constexpr (IsFuture<Ret>::value) {
        Chain(std::move(*ret));
        return;  // Forward() drops the pending reference
      } else {
        this->SetValue(std::move(*ret));
      }
    }
    this->Unref();
  }

  decltype(auto) Call(State<T>* src) {
    if constexpr (Traits::kTakesFuture) {
      src->AddRef();
      return std::invoke(std::move(*f_), Access::Adopt(src));
    } else if constexpr (std::is_void_v<T>) {
      return std::invoke(std::move(*f_));
    } else {
      return std::invoke(std::move(*f_), std::move(src->Value()));
    }
  }

  // F returned a future: resolve with its result when it has one (flattening).
  void Chain(Future<Result>&& inner) {
    State<Result>* s = Access::Release(inner);
    if (s == nullptr) {
      this->SetError(Status(kUnknownErr, "a continuation returned an invalid Future"));
      this->Unref();
      return;
    }
    if (!s->Subscribe(&ThenState::Forward, this)) Forward(this, s);
    s->Unref();  // while subscribed, its promise keeps it alive until the callback returns
  }

  static void Forward(void* arg, StateBase* src) {
    auto* self = static_cast<ThenState*>(arg);
    self->SetResultFrom(static_cast<State<Result>*>(src));
    self->Unref();
  }

  std::optional<F> f_;
};

}  // namespace trpc::future_detail
