#include "trpc/base/logging.h"

#include <dirent.h>
#include <fcntl.h>
#include <google/protobuf/stubs/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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

namespace {

std::atomic<uint64_t> g_written{0};
std::atomic<uint64_t> g_dropped{0};
std::atomic<uint64_t> g_rotations{0};
std::atomic<uint64_t> g_write_errors{0};

// Writes all of `data` to `fd` (a short write or EINTR goes on); false on an error.
bool WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// A log file with rotation. Used by one thread at a time (the writer thread, or Write() under
// the output's lock).
class LogFile {
 public:
  explicit LogFile(const Output& o) : o_(o) {}
  ~LogFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool Open(std::string* err) {
    period_ = Period(RealtimeMillis() / 1000);
    if (!OpenCurrent(err)) return false;
    if (o_.roll != Output::Roll::kBySize) PrunePeriods();
    return true;
  }
  // Appends whole lines; rotates first when they would not fit (by size) or the period changed.
  void Append(const char* data, size_t n) {
    if (o_.roll == Output::Roll::kBySize) {
      if (size_ > 0 && size_ + n > o_.roll_size) RotateBySize();
    } else if (int64_t p = Period(RealtimeMillis() / 1000); p != period_) {
      period_ = p;
      ReopenForPeriod();
    }
    if (fd_ < 0 || !WriteAll(fd_, data, n)) {
      g_write_errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    size_ += n;
  }

 private:
  // The period a time falls in (local time): the day or the hour, as a number that names it.
  int64_t Period(time_t secs) const {
    if (o_.roll == Output::Roll::kBySize) return 0;
    tm t;
    localtime_r(&secs, &t);
    int64_t day = (t.tm_year + 1900) * 10000 + (t.tm_mon + 1) * 100 + t.tm_mday;
    return o_.roll == Output::Roll::kByDay ? day : day * 100 + t.tm_hour;
  }
  std::string CurrentName() const {
    if (o_.roll == Output::Roll::kBySize) return o_.filename;
    return o_.filename + "." + std::to_string(period_);
  }
  bool OpenCurrent(std::string* err) {
    const std::string name = CurrentName();
    int fd = ::open(name.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      if (err != nullptr) *err = "cannot open log file " + name + ": " + std::strerror(errno);
      g_write_errors.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    struct stat st;
    size_ = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
    return true;
  }
  // name.N-1 -> name.N, ..., name -> name.1; name.<reserve_count> is replaced (the oldest goes).
  void RotateBySize() {
    const std::string& base = o_.filename;
    if (o_.reserve_count == 0) {
      ::unlink(base.c_str());
    } else {
      for (uint32_t i = o_.reserve_count; i > 1; --i) {
        ::rename((base + "." + std::to_string(i - 1)).c_str(),
                 (base + "." + std::to_string(i)).c_str());
      }
      ::rename(base.c_str(), (base + ".1").c_str());
    }
    g_rotations.fetch_add(1, std::memory_order_relaxed);
    OpenCurrent(nullptr);
  }
  void ReopenForPeriod() {
    g_rotations.fetch_add(1, std::memory_order_relaxed);
    OpenCurrent(nullptr);
    PrunePeriods();
  }
  // Keeps the current period's file and the `reserve_count` newest before it.
  void PrunePeriods() {
    const size_t slash = o_.filename.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : o_.filename.substr(0, slash + 1);
    const std::string prefix =
        (slash == std::string::npos ? o_.filename : o_.filename.substr(slash + 1)) + ".";
    const size_t digits = o_.roll == Output::Roll::kByDay ? 8 : 10;
    std::vector<std::string> old;
    if (DIR* d = ::opendir(dir.c_str())) {
      while (dirent* e = ::readdir(d)) {
        std::string_view n(e->d_name);
        if (n.size() != prefix.size() + digits || n.substr(0, prefix.size()) != prefix) continue;
        std::string_view stamp = n.substr(prefix.size());
        if (stamp.find_first_not_of("0123456789") != std::string_view::npos) continue;
        if (std::string(stamp) < std::to_string(period_)) old.emplace_back(n);
      }
      ::closedir(d);
    }
    std::sort(old.begin(), old.end());
    for (size_t i = 0; i + o_.reserve_count < old.size(); ++i) {
      ::unlink((slash == std::string::npos ? old[i] : dir + old[i]).c_str());
    }
  }

  const Output o_;
  int fd_ = -1;
  uint64_t size_ = 0;
  int64_t period_ = 0;
};

// The file output: its file and, in async mode, a bounded queue of lines and the thread that
// writes them. Lines are whole when queued, and written whole, in order.
//
// Memory ordering: Write() finds the output through g_output (acquire; SetOutput publishes it
// with release); the queue is under `mu`. An output replaced by SetOutput/ResetOutput is
// stopped (its queue written out) and kept, never freed: a Write() that loaded it a moment
// before may still use it, and then finds it stopped and writes to stderr.
struct FileOutput {
  explicit FileOutput(const Output& o) : options(o), file(o) {}
  const Output options;
  LogFile file;
  std::mutex mu;  // the queue, or (sync) the file
  std::condition_variable wake;
  std::deque<std::string> queue;
  size_t queued_bytes = 0;  // of `queue`
  bool stopping = false;
  std::thread writer;

  void Run() {
    std::string batch;
    std::unique_lock lock(mu);
    for (;;) {
      wake.wait(lock, [this] { return stopping || !queue.empty(); });
      if (queue.empty() && stopping) return;
      // Up to 64 KiB of lines per write: whole lines only.
      batch.clear();
      size_t lines = 0;
      while (!queue.empty() && batch.size() < 65536) {
        batch += queue.front();
        queued_bytes -= queue.front().size();
        queue.pop_front();
        ++lines;
      }
      lock.unlock();
      file.Append(batch.data(), batch.size());
      g_written.fetch_add(lines, std::memory_order_relaxed);
      lock.lock();
    }
  }
  // False when this output has been replaced meanwhile: the caller writes to stderr.
  bool Put(std::string&& line) {
    if (!options.async) {
      std::lock_guard lock(mu);
      file.Append(line.data(), line.size());
      g_written.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    {
      std::lock_guard lock(mu);
      if (stopping) return false;
      if (queue.size() >= options.queue_lines || queued_bytes + line.size() > options.queue_bytes) {
        g_dropped.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
      queued_bytes += line.size();
      queue.push_back(std::move(line));
    }
    wake.notify_one();
    return true;
  }
  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake.notify_one();
    if (writer.joinable()) writer.join();
  }
};

std::mutex g_output_mu;  // SetOutput / ResetOutput
std::atomic<FileOutput*> g_output{nullptr};
std::vector<std::unique_ptr<FileOutput>>* g_retired = new std::vector<std::unique_ptr<FileOutput>>;

void AppendJsonString(std::string_view s, fmt::memory_buffer* out) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"':
        out->append(std::string_view("\\\""));
        break;
      case '\\':
        out->append(std::string_view("\\\\"));
        break;
      case '\n':
        out->append(std::string_view("\\n"));
        break;
      case '\r':
        out->append(std::string_view("\\r"));
        break;
      case '\t':
        out->append(std::string_view("\\t"));
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          fmt::format_to(std::back_inserter(*out), "\\u{:04x}", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

void Write(Level level, const char* file, int line, std::string_view msg) {
  const char* base = std::strrchr(file, '/');
  base = base ? base + 1 : file;
  int64_t ms = RealtimeMillis();
  time_t secs = ms / 1000;
  tm tm_buf;
  localtime_r(&secs, &tm_buf);
  char ts[32];
  strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm_buf);
  FileOutput* output = g_output.load(std::memory_order_acquire);
  fmt::memory_buffer out;
  if (output != nullptr && output->options.json) {
    fmt::format_to(std::back_inserter(out),
                   R"({{"time":"{}.{:03d}","level":"{}","file":"{}",)"
                   R"("line":{},"msg":)",
                   ts, ms % 1000, LevelName(level), base, line);
    AppendJsonString(msg, &out);
    out.append(std::string_view("}\n"));
  } else {
    fmt::format_to(std::back_inserter(out), "[{}.{:03d}] [{}] [{}:{}] {}\n", ts, ms % 1000,
                   LevelName(level), base, line, msg);
  }
  if (output != nullptr && output->Put(std::string(out.data(), out.size()))) return;
  // One write(2) per line keeps lines from different threads whole.
  ssize_t unused = ::write(STDERR_FILENO, out.data(), out.size());
  (void)unused;
}

bool SetOutput(const Output& o, std::string* err) {
  std::lock_guard lock(g_output_mu);
  FileOutput* next = nullptr;
  if (!o.filename.empty()) {
    auto made = std::make_unique<FileOutput>(o);
    if (!made->file.Open(err)) return false;
    if (o.async) made->writer = std::thread([p = made.get()] { p->Run(); });
    next = made.release();
  }
  FileOutput* old = g_output.exchange(next, std::memory_order_acq_rel);
  if (old != nullptr) {
    old->Stop();
    g_retired->emplace_back(old);
  }
  return true;
}

void ResetOutput() {
  std::string unused;
  SetOutput(Output{}, &unused);
}

OutputStats GetOutputStats() {
  return {g_written.load(std::memory_order_relaxed), g_dropped.load(std::memory_order_relaxed),
          g_rotations.load(std::memory_order_relaxed),
          g_write_errors.load(std::memory_order_relaxed)};
}

void RouteProtobufLogs() {
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
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
