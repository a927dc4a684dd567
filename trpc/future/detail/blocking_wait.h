#pragma once

#include <cstdint>

#include "trpc/future/detail/shared_state.h"

namespace trpc::future_detail {

/// Waits until `state` resolves or `deadline_ns` (MonotonicNanos(); < 0 = no limit) passes:
/// parks the calling fiber (its worker runs other fibers meanwhile), or blocks a plain thread
/// on a futex. Uses the state's callback slot, so nothing else may be subscribed to it; the
/// caller owns a reference to `state`. Returns true if the state has resolved, and then the
/// result written by the completer happens-before the return.
bool WaitResolved(StateBase* state, int64_t deadline_ns);

/// MonotonicNanos() + `timeout_ns`, for a timeout already clamped to [0, 100 years].
int64_t DeadlineAfter(int64_t timeout_ns);

}  // namespace trpc::future_detail
