#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "test/common/loopback_listener.h"
#include "trpc/base/clock.h"
#include "trpc/base/net_address.h"
#include "trpc/naming/etcd/detail/etcd_client.h"
#include "trpc/naming/etcd/detail/etcd_gateway.pb.h"

namespace trpc::testing {

/// A misbehaving stand-in for etcd's v3 JSON gateway (docs/naming.md): an HTTP/1.1 server on
/// a loopback port (bound to 0) that answers `/v3/kv/range` with a fixed set of keys and
/// `/v3/watch` with one chosen bad behaviour, and records when each request came. It speaks
/// just enough of the gateway for the etcd selector: one request per connection, a
/// Content-Length body in, a Content-Length answer (range) or a chunked stream (watch) out.
///
/// Thread contract: construct, read the records and destroy from the test thread; each
/// connection is served on a thread of its own, all joined by the destructor.
class FakeEtcdGateway {
 public:
  enum class Watch {
    kCompacted,           // "created", then cancelled as compacted
    kCreatedThenClose,    // "created", then the end of the stream
    kCreatedThenGarbage,  // "created", then bytes that are not JSON; held open
    kCancelled,           // cancelled (not compacted) with `cancel_reason`
    kFlood,               // "created", then `flood_events` responses of one event each; held
  };
  struct Options {
    Watch watch = Watch::kCreatedThenClose;
    int64_t revision = 5;
    std::vector<std::pair<std::string, std::string>> kvs;  // the range's keys and values
    std::string cancel_reason;
    // kFlood: event i puts FloodKey(i % flood_keys) with weight i % 1000 + 1, so that each
    // event changes the list.
    int flood_events = 0;
    int flood_keys = 50;
  };

  explicit FakeEtcdGateway(Options options) : options_(std::move(options)) {
    listen_fd_ = ListenOnLoopback(&port_);
    if (listen_fd_ < 0) std::abort();  // the test's own set-up, not peer input
    accept_thread_ = std::thread([this] { AcceptLoop(); });
  }
  ~FakeEtcdGateway() {
    stop_.store(true);
    accept_thread_.join();
    ::close(listen_fd_);
    std::vector<ConnThread> threads;
    {
      std::lock_guard<std::mutex> lock(mu_);
      threads.swap(conn_threads_);
    }
    for (auto& t : threads) t.thread.join();
  }
  FakeEtcdGateway(const FakeEtcdGateway&) = delete;
  FakeEtcdGateway& operator=(const FakeEtcdGateway&) = delete;

  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  /// MonotonicNanos() of each range request / watch request so far.
  std::vector<int64_t> ranges() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ranges_;
  }
  std::vector<int64_t> watches() const {
    std::lock_guard<std::mutex> lock(mu_);
    return watches_;
  }

  static std::string FloodKey(int i) {
    return "/trpc/default/svc/127.0.0.1:" + std::to_string(10000 + i);
  }
  static std::string InstanceJson(int port, int weight) {
    return "{\"host\":\"127.0.0.1\",\"port\":" + std::to_string(port) +
           ",\"weight\":" + std::to_string(weight) + "}";
  }

 private:
  void AcceptLoop() {
    while (!stop_.load()) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      // Joins the connections that ended, so that a client that reconnects in a loop costs
      // no thread per attempt here.
      for (size_t i = 0; i < conn_threads_.size();) {
        if (conn_threads_[i].done->load()) {
          conn_threads_[i].thread.join();
          conn_threads_[i] = std::move(conn_threads_.back());
          conn_threads_.pop_back();
        } else {
          ++i;
        }
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      conn_threads_.push_back({std::thread([this, fd, done] {
                                 Serve(fd);
                                 ::close(fd);
                                 done->store(true);
                               }),
                               done});
    }
  }

  // Reads one request: true with its path.
  bool ReadRequest(int fd, std::string* path) {
    std::string in;
    char buf[4096];
    size_t head_end = std::string::npos;
    size_t want = 0;
    for (;;) {
      if (head_end == std::string::npos) {
        head_end = in.find("\r\n\r\n");
        if (head_end != std::string::npos) {
          const size_t cl = in.find("Content-Length: ");
          want = head_end + 4 +
                 (cl == std::string::npos ? 0 : std::strtoul(in.c_str() + cl + 16, nullptr, 10));
        }
      }
      if (head_end != std::string::npos && in.size() >= want) break;
      if (!WaitReadable(fd)) return false;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) return false;
      in.append(buf, static_cast<size_t>(n));
    }
    const size_t sp = in.find(' ');
    const size_t sp2 = in.find(' ', sp + 1);
    if (sp == std::string::npos || sp2 == std::string::npos) return false;
    *path = in.substr(sp + 1, sp2 - sp - 1);
    return true;
  }

  // Waits for input (or the peer's close) while the gateway runs.
  bool WaitReadable(int fd) {
    while (!stop_.load()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) > 0) return true;
    }
    return false;
  }

  static bool SendAll(int fd, std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  static std::string Chunk(std::string_view body) {
    char size[32];
    std::snprintf(size, sizeof(size), "%zx\r\n", body.size());
    return std::string(size) + std::string(body) + "\r\n";
  }

  std::string Header() const {
    return "{\"revision\":\"" + std::to_string(options_.revision) + "\"}";
  }

  void Serve(int fd) {
    std::string path;
    if (!ReadRequest(fd, &path)) return;
    const int64_t now = MonotonicNanos();
    if (path == "/v3/kv/range") {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ranges_.push_back(now);
      }
      naming::etcd::detail::RangeResponse rsp;
      rsp.mutable_header()->set_revision(options_.revision);
      for (const auto& [k, v] : options_.kvs) {
        auto* kv = rsp.add_kvs();
        kv->set_key(k);
        kv->set_value(v);
        kv->set_mod_revision(options_.revision);
      }
      const std::string body = naming::etcd::detail::ToJson(rsp);
      SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body);
      return;
    }
    if (path != "/v3/watch") {
      SendAll(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      watches_.push_back(now);
    }
    std::string out =
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
    const std::string created = "{\"result\":{\"header\":" + Header() + ",\"created\":true}}\n";
    bool hold = false;
    switch (options_.watch) {
      case Watch::kCompacted:
        out += Chunk(created);
        out += Chunk("{\"result\":{\"header\":" + Header() +
                     ",\"canceled\":true,\"compact_revision\":\"" +
                     std::to_string(options_.revision) + "\"}}\n");
        out += "0\r\n\r\n";
        break;
      case Watch::kCreatedThenClose:
        out += Chunk(created);
        out += "0\r\n\r\n";
        break;
      case Watch::kCreatedThenGarbage:
        out += Chunk(created);
        out += Chunk("\x01garbage\xff}{\n");
        hold = true;
        break;
      case Watch::kCancelled: {
        naming::etcd::detail::WatchStreamItem item;
        item.mutable_result()->set_canceled(true);
        item.mutable_result()->set_cancel_reason(options_.cancel_reason);
        out += Chunk(naming::etcd::detail::ToJson(item));
        out += "0\r\n\r\n";
        break;
      }
      case Watch::kFlood:
        out += Chunk(created);
        for (int i = 0; i < options_.flood_events; ++i) {
          naming::etcd::detail::WatchStreamItem item;
          auto* ev = item.mutable_result()->add_events();
          const int k = i % options_.flood_keys;
          ev->mutable_kv()->set_key(FloodKey(k));
          ev->mutable_kv()->set_value(InstanceJson(10000 + k, i % 1000 + 1));
          ev->mutable_kv()->set_mod_revision(options_.revision + 1 + i);
          out += Chunk(naming::etcd::detail::ToJson(item) + "\n");
        }
        hold = true;
        break;
    }
    if (!SendAll(fd, out) || !hold) return;
    // Held open until the client goes (its FIN) or the gateway stops.
    char buf[4096];
    while (WaitReadable(fd) && ::recv(fd, buf, sizeof(buf), 0) > 0) {
    }
  }

  struct ConnThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  const Options options_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread accept_thread_;
  mutable std::mutex mu_;
  std::vector<ConnThread> conn_threads_;  // guarded by mu_
  std::vector<int64_t> ranges_;           // guarded by mu_
  std::vector<int64_t> watches_;          // guarded by mu_
};

}  // namespace trpc::testing
