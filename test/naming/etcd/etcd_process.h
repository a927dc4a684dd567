#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/client/http/http_stream.h"
#include "trpc/transport/tls_context.h"

namespace trpc::testing {

/// A real etcd for tests: a child process on free loopback ports (client and peer), with a
/// data dir in a temp folder removed at the end. It can be SIGKILLed and started again on the
/// same ports and data dir. Tests call Installed() first and GTEST_SKIP() without it.
///
/// etcd cannot bind port 0 and say which port it got, so its ports are chosen here: below the
/// kernel's ephemeral range (/proc/sys/net/ipv4/ip_local_port_range), which outgoing
/// connections and their TIME_WAITs never take, and free when chosen. Another process may
/// still take one before etcd binds it: the first Start() then picks two others and tries
/// again.
///
/// Thread contract: one test thread; not thread-safe.
class EtcdProcess {
 public:
  static constexpr const char* kBinary = "/usr/bin/etcd";
  static bool Installed() { return ::access(kBinary, X_OK) == 0; }

  /// TLS on the client port: etcd's certificate and key, and, with `client_ca`, client
  /// certificates from that CA required (--client-cert-auth). `client` is how this class's own
  /// calls (Post, the start-up check) reach it.
  struct Tls {
    std::string cert, key, client_ca;
    std::shared_ptr<const TlsContext> client;
  };

  EtcdProcess() : EtcdProcess(Tls{}) {}
  explicit EtcdProcess(Tls tls) : tls_(std::move(tls)) {
    char tmpl[] = "/tmp/trpc_etcd_test_XXXXXX";
    dir_ = ::mkdtemp(tmpl) ? tmpl : "";
    PickPorts();
  }
  ~EtcdProcess() {
    Kill();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  /// Starts etcd and waits (up to `wait_ms`) until it answers; false if it did not. The first
  /// start moves to other ports when one was taken (up to kStartTries times); a restart keeps
  /// them, since the test's clients know them.
  bool Start(int wait_ms = 10000) {
    if (pid_ > 0 || dir_.empty()) return false;
    for (int tries = 1;; ++tries) {
      const StartResult result = StartOnce(wait_ms);
      if (result == StartResult::kAnswers) {
        started_ = true;
        return true;
      }
      if (result != StartResult::kPortTaken || started_ || tries == kStartTries) return false;
      std::error_code ec;
      std::filesystem::remove_all(dir_ + "/data", ec);
      PickPorts();
    }
  }

  /// SIGKILL, and waits for the process to be gone.
  void Kill() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  bool running() const { return pid_ > 0; }
  uint16_t client_port() const { return client_port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(client_port_); }
  NetAddress address() const {
    NetAddress a;
    NetAddress::Parse(endpoint(), &a);
    return a;
  }
  const std::string& dir() const { return dir_; }

  /// A unary gateway call (POST `path` with a JSON body); the status, or -1 when unreachable.
  int Post(const std::string& path, const std::string& json, std::string* body = nullptr) const {
    http::HttpStreamRequest req;
    req.target = path;
    req.body = json;
    http::HttpStreamOptions opts;
    opts.connect_timeout_ms = opts.read_timeout_ms = opts.total_timeout_ms = 2000;
    opts.tls = tls_.client;
    int status = 0;
    std::string b, err;
    if (!http::HttpFetch(address(), req, opts, 1 << 20, &status, &b, &err)) return -1;
    if (body) *body = b;
    return status;
  }

 private:
  static constexpr int kStartTries = 5;
  enum class StartResult { kAnswers, kPortTaken, kFailed };

  StartResult StartOnce(int wait_ms) {
    const std::string client = (tls_.cert.empty() ? "http" : "https") +
                               std::string("://127.0.0.1:") + std::to_string(client_port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peer_port_);
    const std::string data = dir_ + "/data";
    const std::string log = dir_ + "/etcd.log";
    const std::string cluster = "default=" + peer;
    std::error_code ec;
    const uintmax_t log_before =
        std::filesystem::exists(log, ec) ? std::filesystem::file_size(log, ec) : 0;
    // Everything the child needs is ready before fork: between fork and exec it only makes
    // async-signal-safe calls (this process has threads).
    std::vector<std::string> args = {kBinary,   "--name",
                                     "default", "--data-dir",
                                     data,      "--listen-client-urls",
                                     client,    "--advertise-client-urls",
                                     client,    "--listen-peer-urls",
                                     peer,      "--initial-advertise-peer-urls",
                                     peer,      "--initial-cluster",
                                     cluster,   "--log-level",
                                     "warn"};
    if (!tls_.cert.empty()) {
      args.insert(args.end(), {"--cert-file", tls_.cert, "--key-file", tls_.key});
    }
    if (!tls_.client_ca.empty()) {
      args.insert(args.end(), {"--client-cert-auth", "--trusted-ca-file", tls_.client_ca});
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(kBinary, argv.data());
      ::_exit(127);
    }
    if (pid_ < 0) return StartResult::kFailed;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
    while (std::chrono::steady_clock::now() < until) {
      if (Answers()) return StartResult::kAnswers;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {  // it died at start
        pid_ = -1;
        return LogSince(log, log_before).find("address already in use") != std::string::npos
                   ? StartResult::kPortTaken
                   : StartResult::kFailed;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return StartResult::kFailed;
  }

  bool Answers() const {
    std::string body;
    return Post("/v3/kv/range", "{\"key\":\"AA==\"}", &body) == 200;
  }

  // What `log` holds past its first `offset` bytes.
  static std::string LogSince(const std::string& log, uintmax_t offset) {
    std::ifstream in(log);
    in.seekg(static_cast<std::streamoff>(offset));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }

  // Two different ports below the ephemeral range that nothing has bound now.
  void PickPorts() {
    client_port_ = LowFreePort(0);
    peer_port_ = LowFreePort(client_port_);
  }

  // A loopback port in [10000, the ephemeral range's start) ([1024, ...) if that start is
  // lower than 11000) that a bind() finds free, other than `other`; 0 if none was found.
  static uint16_t LowFreePort(uint16_t other) {
    unsigned ephemeral_low = 32768;
    std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
    const unsigned lo = ephemeral_low > 11000 ? 10000 : 1024;
    static std::mt19937 rng{std::random_device{}()};
    std::uniform_int_distribution<unsigned> pick(lo, std::max(lo, ephemeral_low - 1));
    for (int i = 0; i < 200; ++i) {
      const auto port = static_cast<uint16_t>(pick(rng));
      if (port == other) continue;
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      a.sin_port = htons(port);
      const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      ::close(fd);
      if (free) return port;
    }
    return 0;
  }

  Tls tls_;
  std::string dir_;
  uint16_t client_port_ = 0;
  uint16_t peer_port_ = 0;
  pid_t pid_ = -1;
  bool started_ = false;  // once: restarts keep the ports
};

/// A loopback TCP proxy to `target` that a test can cut: while blocked, it drops the
/// connections it carries and closes new ones at once (a network partition between a client and
/// etcd, while etcd itself keeps running).
///
/// Thread contract: Block/Unblock/port from the test thread; one internal thread carries every
/// connection (poll loop, 20 ms ticks, so Block takes effect within a tick).
class TcpProxy {
 public:
  explicit TcpProxy(uint16_t target_port) : target_port_(target_port) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    ::listen(listen_fd_, 64);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TcpProxy() {
    stop_.store(true);
    thread_.join();
    for (auto& [a, b] : pairs_) {
      ::close(a);
      ::close(b);
    }
    ::close(listen_fd_);
  }
  uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  void Block() { blocked_.store(true); }
  void Unblock() { blocked_.store(false); }

 private:
  void Loop() {
    std::vector<char> buf(64 * 1024);
    while (!stop_.load()) {
      if (blocked_.load()) {
        for (auto& [a, b] : pairs_) {
          ::close(a);
          ::close(b);
        }
        pairs_.clear();
      }
      std::vector<pollfd> fds{{listen_fd_, POLLIN, 0}};
      for (auto& [a, b] : pairs_) {
        fds.push_back({a, POLLIN, 0});
        fds.push_back({b, POLLIN, 0});
      }
      if (::poll(fds.data(), fds.size(), 20) <= 0) continue;
      std::vector<size_t> dead;
      for (size_t i = 0; i < pairs_.size(); ++i) {
        for (int side = 0; side < 2; ++side) {
          if (fds[1 + 2 * i + side].revents == 0) continue;
          const int from = side == 0 ? pairs_[i].first : pairs_[i].second;
          const int to = side == 0 ? pairs_[i].second : pairs_[i].first;
          const ssize_t n = ::recv(from, buf.data(), buf.size(), 0);
          if (n <= 0 || ::send(to, buf.data(), n, MSG_NOSIGNAL) != n) {
            dead.push_back(i);
            break;
          }
        }
      }
      for (auto it = dead.rbegin(); it != dead.rend(); ++it) {
        ::close(pairs_[*it].first);
        ::close(pairs_[*it].second);
        pairs_.erase(pairs_.begin() + *it);
      }
      if (fds[0].revents != 0) {
        const int c = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        if (blocked_.load()) {
          ::close(c);
          continue;
        }
        const int t = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(target_port_);
        if (::connect(t, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
          ::close(c);
          ::close(t);
          continue;
        }
        pairs_.emplace_back(c, t);
      }
    }
  }

  const uint16_t target_port_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<bool> blocked_{false};
  std::vector<std::pair<int, int>> pairs_;  // the proxy thread's: (client, target)
  std::thread thread_;
};

}  // namespace trpc::testing
