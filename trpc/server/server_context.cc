#include "trpc/server/server_context.h"

#include <algorithm>

#include "trpc/base/clock.h"

namespace trpc {

int64_t ServerContext::GetRemainingTimeoutMs() const {
  if (deadline_ns_ == 0) return 0;
  int64_t left = deadline_ns_ - MonotonicNanos();
  return left <= 0 ? 0 : std::max<int64_t>(1, left / kNanosPerMilli);
}

}  // namespace trpc
