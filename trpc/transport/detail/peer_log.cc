#include "trpc/transport/detail/peer_log.h"

#include <mutex>
#include <unordered_map>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc::detail {

namespace {
// Peers remembered at once. Past it the table starts over: many peers failing at once are
// logged a little more often rather than the table growing with a flood of source addresses.
constexpr size_t kMaxPeers = 4096;
}  // namespace

void LogPerPeer(const NetAddress& peer, const std::string& message) {
  static std::mutex mu;
  static auto* last = new std::unordered_map<std::string, int64_t>;  // IP -> last log time
  const int64_t now = MonotonicNanos();
  {
    std::lock_guard lock(mu);
    if (last->size() >= kMaxPeers) last->clear();
    int64_t& at = (*last)[peer.ip()];
    if (at != 0 && now - at < kNanosPerSecond) return;
    at = now;
  }
  TRPC_LOG_WARN("{}", message);
}

}  // namespace trpc::detail
