#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

#include "trpc/base/clock.h"

namespace trpc::log {

enum class Level : int { kTrace = 0, kDebug, kInfo, kWarn, kError, kFatal, kOff };

/// The process-wide minimum level. Changeable at run time from any thread (relaxed atomics:
/// a level change needs no ordering with anything else).
Level GetLevel();
void SetLevel(Level level);
/// Parses "trace|debug|info|warn|error|fatal|off"; returns false for anything else.
bool ParseLevel(std::string_view name, Level* out);
std::string_view LevelName(Level level);

inline bool Enabled(Level level) { return level >= GetLevel(); }

/// Writes one formatted line to the output (stderr unless SetOutput() chose a file). Lines from
/// threads never mix: one write(2) per line to stderr, whole lines to a file.
void Write(Level level, const char* file, int line, std::string_view msg);

/// Where lines go (`plugins.log.default`, docs/logging.md): a file with rotation instead of
/// stderr, written synchronously or by a writer thread, as text or JSON lines.
struct Output {
  enum class Roll { kBySize, kByDay, kByHour };
  std::string filename;  // empty: stderr
  Roll roll = Roll::kBySize;
  uint64_t roll_size = 100u << 20;  // bytes (kBySize)
  uint32_t reserve_count = 10;      // rotated files kept besides the current one
  bool async = true;                // a writer thread; else each Write() writes under a lock
  size_t queue_lines = 65536;       // async: lines waiting; more are dropped (counted)
  /// async: bytes of lines waiting, at most; more are dropped (counted). Lines can carry what a
  /// peer sent (an error's text), so the lines alone would not bound the memory.
  size_t queue_bytes = 16u << 20;
  bool json = false;  // JSON lines instead of text

  bool operator==(const Output&) const = default;
};
/// Sends every line to `out` from now on (flushing and replacing a previous output). False with
/// `*err` when the file cannot be opened; the output is then unchanged. Thread-safe.
bool SetOutput(const Output& out, std::string* err);
/// Back to stderr, after writing what the writer thread still holds. Idempotent.
void ResetOutput();

/// Counters of the file output since the process started (the admin's /metrics).
struct OutputStats {
  uint64_t lines_written = 0;
  uint64_t lines_dropped = 0;  // async: the queue was full
  uint64_t rotations = 0;
  uint64_t write_errors = 0;  // failed write(2) or open(2) of the file
};
OutputStats GetOutputStats();

/// Sends protobuf's own log lines (e.g. "String field contains invalid UTF-8" while parsing a
/// peer's header) through Write(), rate-limited, instead of straight to stderr. Idempotent.
void RouteProtobufLogs();

/// Admits at most one message per `interval_ns` per call site. Lock-free, safe from any thread;
/// the count of suppressed messages is reported with the next admitted one.
class RateLimiter {
 public:
  explicit RateLimiter(int64_t interval_ns) : interval_ns_(interval_ns) {}
  /// Returns true if a message may be logged now; `suppressed` gets the skipped count.
  bool Admit(uint64_t* suppressed);

 private:
  const int64_t interval_ns_;
  std::atomic<int64_t> next_ns_{0};
  std::atomic<uint64_t> skipped_{0};
};

}  // namespace trpc::log

#define TRPC_LOG_IMPL(level, ...)                                                \
  do {                                                                           \
    if (::trpc::log::Enabled(level)) {                                           \
      ::trpc::log::Write(level, __FILE__, __LINE__, ::fmt::format(__VA_ARGS__)); \
    }                                                                            \
  } while (0)

#define TRPC_LOG_TRACE(...) TRPC_LOG_IMPL(::trpc::log::Level::kTrace, __VA_ARGS__)
#define TRPC_LOG_DEBUG(...) TRPC_LOG_IMPL(::trpc::log::Level::kDebug, __VA_ARGS__)
#define TRPC_LOG_INFO(...) TRPC_LOG_IMPL(::trpc::log::Level::kInfo, __VA_ARGS__)
#define TRPC_LOG_WARN(...) TRPC_LOG_IMPL(::trpc::log::Level::kWarn, __VA_ARGS__)
#define TRPC_LOG_ERROR(...) TRPC_LOG_IMPL(::trpc::log::Level::kError, __VA_ARGS__)

/// Rate-limited form for hot paths (e.g. a flood of bad frames): at most one line per
/// `interval_ms` from this call site.
#define TRPC_LOG_EVERY_MS(level, interval_ms, ...)                                          \
  do {                                                                                      \
    if (::trpc::log::Enabled(level)) {                                                      \
      static ::trpc::log::RateLimiter trpc_log_limiter_(static_cast<int64_t>(interval_ms) * \
                                                        ::trpc::kNanosPerMilli);            \
      uint64_t trpc_log_skipped_ = 0;                                                       \
      if (trpc_log_limiter_.Admit(&trpc_log_skipped_)) {                                    \
        std::string trpc_log_msg_ = ::fmt::format(__VA_ARGS__);                             \
        if (trpc_log_skipped_ > 0) {                                                        \
          trpc_log_msg_ += ::fmt::format(" ({} similar suppressed)", trpc_log_skipped_);    \
        }                                                                                   \
        ::trpc::log::Write(level, __FILE__, __LINE__, trpc_log_msg_);                       \
      }                                                                                     \
    }                                                                                       \
  } while (0)

/// Logs and aborts: for states we cannot recover from (never for bad peer input).
#define TRPC_CHECK(cond, ...)                                                    \
  do {                                                                           \
    if (__builtin_expect(!(cond), 0)) {                                          \
      ::trpc::log::Write(::trpc::log::Level::kFatal, __FILE__, __LINE__,         \
                         ::fmt::format("check failed: " #cond " " __VA_ARGS__)); \
      ::abort();                                                                 \
    }                                                                            \
  } while (0)
