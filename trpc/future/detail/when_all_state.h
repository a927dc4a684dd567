#pragma once

#include <atomic>
#include <cstddef>
#include <tuple>
#include <utility>
#include <vector>

#include "trpc/future/detail/shared_state.h"
#include "trpc/future/future_fwd.h"

namespace trpc::future_detail {

template <typename T>
void ForEachState(std::vector<Future<T>>& futures, auto&& fn) {
  for (auto& f : futures) fn(Access::GetState(f));
}

template <typename... Ts>
void ForEachState(std::tuple<Future<Ts>...>& futures, auto&& fn) {
  std::apply([&](auto&... f) { (fn(Access::GetState(f)), ...); }, futures);
}

/// The shared state of the future WhenAll() returns; it also holds the input futures until
/// every one has resolved, then resolves with them (a vector or a tuple of futures). One
/// allocation for the whole WhenAll(). Owned by the returned future and, until it resolves,
/// by the pending inputs (refs 2).
///
/// `remaining_` starts at inputs + 1: the extra count is dropped by Start() once it has
/// subscribed to every input, so the inputs cannot be moved out while it still walks them.
/// Each arrival is an acq_rel RMW, so every input's resolution (and Start()'s walk)
/// happens-before the last arrival, which moves the inputs into the result.
template <typename Inputs>
class WhenAllState final : public State<Inputs> {
 public:
  WhenAllState(Inputs inputs, size_t count)
      : State<Inputs>(2), inputs_(std::move(inputs)), remaining_(count + 1) {}

  void Start() {
    ForEachState(inputs_, [this](StateBase* s) {
      // An input that has already resolved counts at once.
      if (!s->Subscribe(&WhenAllState::OnInput, this)) Arrive();
    });
    Arrive();
  }

 private:
  static void OnInput(void* arg, StateBase* /*src*/) { static_cast<WhenAllState*>(arg)->Arrive(); }

  void Arrive() {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      this->SetValue(std::move(inputs_));
      this->Unref();
    }
  }

  Inputs inputs_;
  std::atomic<size_t> remaining_;
};

}  // namespace trpc::future_detail
