#include "trpc/base/logging.h"

#include <google/protobuf/stubs/logging.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

namespace trpc::log {

namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
constexpr std::string_view kNames[] = {"trace", "debug", "info", "warn", "error", "fatal", "off"};
}  // namespace

Level GetLevel() { return static_cast<Level>(g_level.load(std::memory_order_relaxed)); }
void SetLevel(Level level) { g_level.store(static_cast<int>(level), std::memory_order_relaxed); }

bool ParseLevel(std::string_view name, Level* out) {
  for (size_t i = 0; i < std::size(kNames); ++i) {
    if (name == kNames[i]) {
      *out = static_cast<Level>(i);
      return true;
    }
  }
  return false;
}

std::string_view LevelName(Level level) { return kNames[static_cast<int>(level)]; }

void Write(Level level, const char* file, int line, std::string_view msg) {
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  int64_t ms = RealtimeMillis();
  time_t secs = ms / 1000;
  tm tm_buf;
  localtime_r(&secs, &tm_buf);
  char ts[32];
  strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm_buf);
  fmt::memory_buffer out;
  fmt::format_to(std::back_inserter(out), "[{}.{:03d}] [{}] [{}:{}] {}\n", ts, ms % 1000,
                 LevelName(level), base, line, msg);
  // One write(2) per line keeps lines from different threads whole.
  ssize_t unused = ::write(STDERR_FILENO, out.data(), out.size());
  (void)unused;
}

void RouteProtobufLogs() {
  google::protobuf::SetLogHandler([](google::protobuf::LogLevel level, const char* file, int line,
                                     const std::string& message) {
    Level ours = level >= google::protobuf::LOGLEVEL_ERROR     ? Level::kError
                 : level == google::protobuf::LOGLEVEL_WARNING ? Level::kWarn
                                                               : Level::kInfo;
    // Peer bytes can trigger these on every bad frame: one line per second at most.
    static RateLimiter limiter(kNanosPerSecond);
    uint64_t skipped = 0;
    if (Enabled(ours) && limiter.Admit(&skipped)) {
      Write(ours, file, line,
            skipped ? fmt::format("protobuf: {} ({} similar suppressed)", message, skipped)
                    : "protobuf: " + message);
    }
  });
}

bool RateLimiter::Admit(uint64_t* suppressed) {
  int64_t now = MonotonicNanos();
  int64_t next = next_ns_.load(std::memory_order_relaxed);
  if (now < next ||
      !next_ns_.compare_exchange_strong(next, now + interval_ns_, std::memory_order_relaxed)) {
    skipped_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  *suppressed = skipped_.exchange(0, std::memory_order_relaxed);
  return true;
}

}  // namespace trpc::log
