#include "trpc/naming/dns/detail/dns_selector.h"

#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "trpc/base/logging.h"
#include "trpc/naming/selector.h"

namespace trpc::naming {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kDefaultRefreshMs = 30000;
constexpr uint32_t kMinRefreshMs = 100;
constexpr uint32_t kMaxRefreshMs = 86400000;

std::mutex resolver_mu;
DnsResolver& ResolverOverride() {
  static auto* r = new DnsResolver;
  return *r;
}

bool Resolve(const std::string& host, uint16_t port, std::vector<NetAddress>* out,
             std::string* error) {
  DnsResolver r;
  {
    std::lock_guard lock(resolver_mu);
    r = ResolverOverride();
  }
  return r ? r(host, port, out, error) : ResolveWithGetaddrinfo(host, port, out, error);
}

// "host:port" split; the host is a name, an IPv4 literal or a bracketed IPv6 literal.
struct HostPort {
  std::string host;
  uint16_t port = 0;
  bool literal = false;  // an IP literal: no lookup needed
  NetAddress addr;       // when literal
};

bool ParseTarget(std::string_view t, HostPort* out) {
  std::string_view host, port;
  const bool bracketed = !t.empty() && t.front() == '[';
  if (bracketed) {
    size_t close = t.find(']');
    if (close == std::string_view::npos || close + 1 >= t.size() || t[close + 1] != ':') {
      return false;
    }
    host = t.substr(1, close - 1);
    port = t.substr(close + 2);
  } else {
    size_t colon = t.rfind(':');
    if (colon == std::string_view::npos) return false;
    host = t.substr(0, colon);
    port = t.substr(colon + 1);
    // A second colon: an IPv6 literal without brackets, where the port cannot be told apart.
    if (host.find(':') != std::string_view::npos) return false;
  }
  unsigned p = 0;
  auto [ptr, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (host.empty() || port.empty() || ec != std::errc() || ptr != port.data() + port.size() ||
      p == 0 || p > 65535) {
    return false;
  }
  for (char c : host) {
    if (c == ' ' || c == '\t' || c == ',' || c == '/') return false;
  }
  out->host = std::string(host);
  out->port = static_cast<uint16_t>(p);
  out->literal = NetAddress::FromIpPort(host, out->port, &out->addr);
  // Brackets are for IPv6 literals only.
  if (bracketed && !(out->literal && out->addr.family() == AF_INET6)) return false;
  return true;
}

// One followed name. The immutable part is set before the watch is shared; the rest is
// guarded by Core::mu, except `on_update`, which only the worker calls (while Core::delivering
// points here) and only the subscription's destructor takes away (once the worker cannot call
// it any more).
struct Watch {
  std::string host;
  uint16_t port = 0;
  std::string service;
  std::string origin;
  Selector::OnUpdate on_update;

  Clock::time_point due;          // next lookup
  bool cancelled = false;         // the subscription is gone
  bool first_done = false;        // the first lookup has been tried (and delivered if any)
  bool delivered = false;         // a list has been delivered
  std::vector<std::string> last;  // the delivered addresses, sorted
  bool failing = false;           // the last lookup failed (for logging state changes)
};

// What the selector, its worker thread and its subscriptions share: the subscribed names and
// the worker's state.
//
// Thread contract: every field is guarded by `mu`; the worker runs lookups and callbacks with
// `mu` released. Subscriptions hold a shared_ptr to it, so it outlives the selector if they do.
struct Core {
  std::mutex mu;
  std::condition_variable wake;  // the worker waits on it: new watch, cancel, stop
  std::condition_variable done;  // subscribers wait on it: first lookups, ended deliveries
  std::vector<std::shared_ptr<Watch>> watches;
  const Watch* delivering = nullptr;  // the watch whose callback is running
  std::thread::id worker_id;
  bool stop = false;
  uint32_t refresh_ms = kDefaultRefreshMs;

  void Run();
  void Lookup(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Watch>& w);
};

void Core::Run() {
  std::unique_lock lock(mu);
  while (!stop) {
    const Clock::time_point now = Clock::now();
    std::shared_ptr<Watch> due;
    Clock::time_point earliest = Clock::time_point::max();
    for (const auto& w : watches) {
      if (w->due <= now) {
        due = w;
        break;
      }
      earliest = std::min(earliest, w->due);
    }
    if (due) {
      Lookup(lock, due);
    } else if (earliest == Clock::time_point::max()) {
      wake.wait(lock);
    } else {
      wake.wait_until(lock, earliest);
    }
  }
}

// Called and returns with `lock` held; releases it for the lookup and the callback.
void Core::Lookup(std::unique_lock<std::mutex>& lock, const std::shared_ptr<Watch>& w) {
  w->due = Clock::now() + std::chrono::milliseconds(refresh_ms);
  lock.unlock();
  std::vector<NetAddress> addrs;
  std::string error;
  bool ok = Resolve(w->host, w->port, &addrs, &error);
  if (ok && addrs.empty()) {
    ok = false;
    error = "no addresses";
  }
  std::vector<std::string> names;
  for (const NetAddress& a : addrs) names.push_back(a.ToString());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  lock.lock();
  if (w->cancelled) return;
  if (!ok) {
    if (!w->failing) {
      TRPC_LOG_WARN("{}client {}: dns selector cannot resolve '{}': {}; keeping {}",
                    w->origin.empty() ? "" : w->origin + ": ", w->service, w->host, error,
                    w->delivered
                        ? "the last list of " + std::to_string(w->last.size()) + " address(es)"
                        : std::string("no list (none resolved yet)"));
    }
    w->failing = true;
  } else {
    if (w->failing) {
      TRPC_LOG_INFO("{}client {}: dns selector resolves '{}' again ({} address(es))",
                    w->origin.empty() ? "" : w->origin + ": ", w->service, w->host, names.size());
    }
    w->failing = false;
    if (!w->delivered || names != w->last) {
      w->last = names;
      w->delivered = true;
      std::vector<Endpoint> list;
      for (const std::string& n : names) {
        Endpoint e;
        NetAddress::Parse(n, &e.addr);
        list.push_back(std::move(e));
      }
      delivering = w.get();
      lock.unlock();
      w->on_update(std::move(list));
      lock.lock();
      delivering = nullptr;
    }
  }
  w->first_done = true;
  done.notify_all();
}

// Ends a watch: after the destructor, the worker neither runs nor will run its callback.
//
// Thread contract: destroyed from any thread, including the worker inside a callback.
class DnsSubscription final : public SelectorSubscription {
 public:
  DnsSubscription(std::shared_ptr<Core> core, std::shared_ptr<Watch> watch)
      : core_(std::move(core)), watch_(std::move(watch)) {}

  ~DnsSubscription() override {
    if (!watch_) return;  // a literal: nothing follows it
    Selector::OnUpdate callback;
    {
      std::unique_lock lock(core_->mu);
      watch_->cancelled = true;
      auto& ws = core_->watches;
      ws.erase(std::remove(ws.begin(), ws.end(), watch_), ws.end());
      if (std::this_thread::get_id() == core_->worker_id && core_->delivering == watch_.get()) {
        // Destroyed by its own callback: the callback is running on this very stack, so it
        // can neither be waited for nor destroyed here; the worker drops it with the watch.
        return;
      }
      core_->done.wait(lock, [&] { return core_->delivering != watch_.get(); });
      callback = std::move(watch_->on_update);
    }
    core_->wake.notify_one();
    // `callback` (and what it holds) is destroyed here, on the caller's thread, unlocked.
  }

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<Watch> watch_;  // null for a literal IP
};

// The "dns" selector (see dns_selector.h).
//
// Thread contract: the Selector one (Init once, then Subscribe from any thread, Stop once
// after the subscriptions are gone). The worker thread starts with the first name subscribed.
class DnsSelector final : public Selector {
 public:
  ~DnsSelector() override { Stop(); }

  std::string_view Name() const override { return "dns"; }

  bool Init(const PluginOptions& options, std::string* err) override {
    for (const auto& [key, value] : options.values) {
      if (key != "refresh_interval") {
        *err = options.At(key) + "plugins.selector.dns." + key +
               ": unknown setting (the dns selector takes refresh_interval)";
        return false;
      }
      uint64_t ms = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
      if (value.empty() || ec != std::errc() || ptr != value.data() + value.size() ||
          ms < kMinRefreshMs || ms > kMaxRefreshMs) {
        *err = options.At(key) + "plugins.selector.dns.refresh_interval: '" + value +
               "' is not a number of milliseconds in " + std::to_string(kMinRefreshMs) + ".." +
               std::to_string(kMaxRefreshMs);
        return false;
      }
      core_->refresh_ms = static_cast<uint32_t>(ms);
    }
    return true;
  }

  std::unique_ptr<SelectorSubscription> Subscribe(const SelectorTarget& target,
                                                  uint32_t first_wait_ms, OnUpdate on_update,
                                                  std::string* err) override {
    HostPort hp;
    if (!ParseTarget(target.target, &hp)) {
      *err = (target.origin.empty() ? "" : target.origin + ": ") + "client " + target.service +
             ": bad target '" + target.target + "' (the dns selector takes host:port)";
      return nullptr;
    }
    if (hp.literal) {
      on_update(std::vector<Endpoint>{Endpoint{hp.addr, 100, {}}});
      return std::make_unique<DnsSubscription>(core_, nullptr);
    }
    auto w = std::make_shared<Watch>();
    w->host = hp.host;
    w->port = hp.port;
    w->service = target.service;
    w->origin = target.origin;
    w->on_update = std::move(on_update);
    w->due = Clock::now();
    std::unique_lock lock(core_->mu);
    if (core_->stop) {
      *err = "client " + target.service + ": the dns selector is stopped";
      return nullptr;
    }
    // Made after the stop check: returning null with it alive would run its destructor, which
    // takes the lock held here.
    auto sub = std::make_unique<DnsSubscription>(core_, w);
    core_->watches.push_back(w);
    if (!worker_.joinable()) {
      worker_ = std::thread([core = core_.get()] { core->Run(); });
      core_->worker_id = worker_.get_id();
    }
    core_->wake.notify_one();
    // Subscribe from a callback (on the worker) cannot wait for the worker.
    if (std::this_thread::get_id() != core_->worker_id) {
      core_->done.wait_for(lock, std::chrono::milliseconds(first_wait_ms),
                           [&] { return w->first_done || core_->stop; });
    }
    return sub;
  }

  void Stop() override {
    std::thread worker;
    {
      std::lock_guard lock(core_->mu);
      core_->stop = true;
      worker = std::move(worker_);
    }
    core_->wake.notify_all();
    core_->done.notify_all();
    if (worker.joinable()) worker.join();
  }

 private:
  std::shared_ptr<Core> core_ = std::make_shared<Core>();
  std::thread worker_;  // guarded by core_->mu
};

}  // namespace

bool ResolveWithGetaddrinfo(const std::string& host, uint16_t port, std::vector<NetAddress>* out,
                            std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    *error = rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : gai_strerror(rc);
    return false;
  }
  std::vector<NetAddress> addrs;
  for (const addrinfo* p = res; p != nullptr; p = p->ai_next) {
    if (p->ai_family == AF_INET || p->ai_family == AF_INET6) {
      addrs.push_back(NetAddress::FromSockaddr(p->ai_addr, p->ai_addrlen));
    }
  }
  freeaddrinfo(res);
  std::sort(addrs.begin(), addrs.end(),
            [](const NetAddress& a, const NetAddress& b) { return a.ToString() < b.ToString(); });
  addrs.erase(std::unique(addrs.begin(), addrs.end(),
                          [](const NetAddress& a, const NetAddress& b) {
                            return a.ToString() == b.ToString();
                          }),
              addrs.end());
  if (addrs.empty()) {
    *error = "no addresses";
    return false;
  }
  *out = std::move(addrs);
  return true;
}

void SetDnsResolverForTesting(DnsResolver resolver) {
  std::lock_guard lock(resolver_mu);
  ResolverOverride() = std::move(resolver);
}

void RegisterDnsSelector() {
  static std::once_flag once;
  std::call_once(once, [] {
    SelectorFactory::Register("dns", [] { return std::make_unique<DnsSelector>(); });
  });
}

}  // namespace trpc::naming
