#include "trpc/transport/detail/peer_log.h"

#include <mutex>
#include <unordered_map>
#include <utility>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"

namespace trpc::detail {

namespace {
// Peers remembered at once. Past it the table starts over: many peers failing at once are
// logged a little more often rather than the table growing with a flood of source addresses.
constexpr size_t kMaxPeers = 4096;
// Lines a second across all peers: many source addresses failing at once (a scan, a botnet, a
// fleet of misconfigured clients) get this many, and a count of what was left out.
constexpr int kMaxLinesPerSecond = 50;
}  // namespace

void LogPerPeer(const NetAddress& peer, const std::string& message) {
  static std::mutex mu;
  static auto* last = new std::unordered_map<std::string, int64_t>;  // IP -> last log time
  static int64_t second_start = 0;                                   // (the rest under mu too)
  static int lines = 0;
  static uint64_t dropped = 0;
  const int64_t now = MonotonicNanos();
  uint64_t dropped_before = 0;
  {
    std::lock_guard lock(mu);
    if (now - second_start >= kNanosPerSecond) {
      second_start = now;
      lines = 0;
      dropped_before = std::exchange(dropped, 0);
    }
    if (last->size() >= kMaxPeers) last->clear();
    int64_t& at = (*last)[peer.ip()];
    if (at != 0 && now - at < kNanosPerSecond) return;
    if (lines >= kMaxLinesPerSecond) {
      ++dropped;
      return;
    }
    ++lines;
    at = now;
  }
  if (dropped_before > 0) {
    TRPC_LOG_WARN("({} more lines about other peers were left out in the last second)",
                  dropped_before);
  }
  TRPC_LOG_WARN("{}", message);
}

}  // namespace trpc::detail
