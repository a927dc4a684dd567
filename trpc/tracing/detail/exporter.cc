#include "trpc/tracing/detail/exporter.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/tracing/detail/otlp_json.h"

namespace trpc::tracing::detail {

namespace {

// Waits for `events` on `fd` until `deadline_ms` (MonotonicMillis); false on timeout or error.
bool WaitFd(int fd, short events, int64_t deadline_ms) {
  for (;;) {
    int64_t left = deadline_ms - MonotonicMillis();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (n < 0 && errno != EINTR) return false;
  }
}

}  // namespace

bool ParseEndpoint(const std::string& url, Endpoint* out, std::string* err) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    *err = "expected an http://host:port/path URL (https is not supported yet), got '" + url + "'";
    return false;
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  Endpoint e;
  e.path = slash == std::string::npos ? "/v1/traces" : rest.substr(slash);
  std::string port = "80";
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) {
      *err = "unbalanced '[' in '" + url + "'";
      return false;
    }
    e.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        *err = "expected ':' after ']' in '" + url + "'";
        return false;
      }
      port = authority.substr(close + 2);
    }
  } else if (size_t colon = authority.rfind(':'); colon != std::string::npos) {
    e.host = authority.substr(0, colon);
    port = authority.substr(colon + 1);
  } else {
    e.host = authority;
  }
  char* end = nullptr;
  unsigned long p = std::strtoul(port.c_str(), &end, 10);
  if (e.host.empty() || port.empty() || *end != '\0' || p == 0 || p > 65535) {
    *err = "expected http://host:port/path, got '" + url + "'";
    return false;
  }
  e.port = static_cast<uint16_t>(p);
  *out = std::move(e);
  return true;
}

BatchExporter::BatchExporter(TracingConfig config, std::string service_name)
    : config_(std::move(config)),
      service_name_(std::move(service_name)),
      queue_(std::bit_ceil<size_t>(std::max<uint32_t>(2, config_.queue_size))) {}

BatchExporter::~BatchExporter() {
  Stop();
  while (SpanData* s = queue_.TryPop()) delete s;
}

bool BatchExporter::Start(std::string* err) {
  if (!config_.endpoint.empty() && !ParseEndpoint(config_.endpoint, &endpoint_, err)) {
    return false;
  }
  thread_ = std::thread([this] { Run(); });
  return true;
}

void BatchExporter::Enqueue(std::unique_ptr<SpanData> span) {
  if (stopping_.load(std::memory_order_relaxed) || !queue_.TryPush(span.get())) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  span.release();  // the queue owns it now
  if (queue_.Size() >= config_.batch_size) wake_.notify_one();
}

void BatchExporter::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard lock(mu_);  // so that the thread cannot miss the wake-up
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  Disconnect();
}

BatchExporter::Stats BatchExporter::stats() const {
  return {exported_.load(std::memory_order_relaxed), dropped_.load(std::memory_order_relaxed),
          export_failures_.load(std::memory_order_relaxed)};
}

void BatchExporter::Drain(std::vector<std::unique_ptr<SpanData>>* batch) {
  while (batch->size() < config_.batch_size) {
    SpanData* s = queue_.TryPop();
    if (s == nullptr) break;
    batch->emplace_back(s);
  }
}

void BatchExporter::Run() {
  std::vector<std::unique_ptr<SpanData>> batch;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(config_.batch_timeout), [this] {
        return stopping_.load(std::memory_order_relaxed) || queue_.Size() >= config_.batch_size;
      });
    }
    const bool stopping = stopping_.load(std::memory_order_relaxed);
    // Full batches at once; a partial one when its time is up (or at the stop).
    do {
      batch.clear();
      Drain(&batch);
      if (!batch.empty()) Export(&batch);
    } while (batch.size() == config_.batch_size);
    if (stopping) return;
  }
}

void BatchExporter::Export(std::vector<std::unique_ptr<SpanData>>* batch) {
  const uint64_t n = batch->size();
  if (config_.endpoint.empty()) {
    dropped_.fetch_add(n, std::memory_order_relaxed);
    return;
  }
  if (Post(EncodeOtlpJson(service_name_, *batch))) {
    exported_.fetch_add(n, std::memory_order_relaxed);
  } else {
    export_failures_.fetch_add(1, std::memory_order_relaxed);
    dropped_.fetch_add(n, std::memory_order_relaxed);
    Disconnect();
  }
}

bool BatchExporter::Connect(int64_t deadline_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(endpoint_.port);
  if (::getaddrinfo(endpoint_.host.c_str(), port.c_str(), &hints, &res) != 0) return false;
  bool ok = false;
  for (addrinfo* a = res; a != nullptr && !ok; a = a->ai_next) {
    int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS && WaitFd(fd, POLLOUT, deadline_ms)) {
      int soerr = 0;
      socklen_t len = sizeof(soerr);
      rc = ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0 ? 0 : -1;
    }
    if (rc == 0) {
      fd_ = fd;
      ok = true;
    } else {
      ::close(fd);
    }
  }
  ::freeaddrinfo(res);
  return ok;
}

void BatchExporter::Disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool BatchExporter::Post(const std::string& body) {
  const int64_t deadline = MonotonicMillis() + config_.export_timeout;
  if (fd_ < 0 && !Connect(deadline)) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "tracing: cannot connect to the collector at {}",
                      config_.endpoint);
    return false;
  }
  std::string req =
      "POST " + endpoint_.path + " HTTP/1.1\r\nHost: " + endpoint_.host + ":" +
      std::to_string(endpoint_.port) +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n";
  req += body;
  for (size_t sent = 0; sent < req.size();) {
    ssize_t n = ::send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFd(fd_, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  // The answer: a status line, headers, and a Content-Length body (the collector's), read
  // whole so that the connection can carry the next request.
  std::string in;
  size_t head_end = std::string::npos;
  size_t need = 0;
  for (;;) {
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        std::string head = in.substr(0, head_end);
        for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t cl = head.find("\r\ncontent-length:");
        if (cl == std::string::npos) {
          Disconnect();  // no length: read to the close is not worth it; the next reconnects
          need = 0;
        } else {
          need = std::strtoul(head.c_str() + cl + 17, nullptr, 10);
        }
        if (head.find("\r\nconnection: close") != std::string::npos) Disconnect();
      }
    }
    if (head_end != std::string::npos && (fd_ < 0 || in.size() >= head_end + 4 + need)) break;
    if (in.size() > (1u << 20)) return false;  // a collector answer is small
    char buf[4096];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n > 0) {
      in.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (!WaitFd(fd_, POLLIN, deadline)) return false;
    } else {
      return false;
    }
  }
  const bool ok = in.rfind("HTTP/1.1 2", 0) == 0 || in.rfind("HTTP/1.0 2", 0) == 0;
  if (!ok) {
    TRPC_LOG_EVERY_MS(log::Level::kWarn, 10000, "tracing: the collector at {} answered: {}",
                      config_.endpoint, in.substr(0, std::min<size_t>(in.find('\r'), 200)));
  }
  return ok;
}

}  // namespace trpc::tracing::detail
