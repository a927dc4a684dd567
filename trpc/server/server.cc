#include "trpc/server/server.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/detail/memory.h"
#include "trpc/base/logging.h"
#include "trpc/base/suggest.h"
#include "trpc/codec/detail/codec.h"
#include "trpc/reactor/reactor.h"
#include "trpc/runtime/detail/merge_thread_model.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/detail/listen_file.h"
#include "trpc/server/detail/parked_work.h"
#include "trpc/server/detail/service_adapter.h"
#include "trpc/transport/buffer_budget.h"

namespace trpc {

namespace {
// The admin service's name (trpc/admin/admin.h), which server.admin_port asks for.
constexpr char kAdminServiceName[] = "trpc.admin";
// A side service waits at most this long for its calls in flight when the server stops.
constexpr int64_t kSideStopWaitMs = 1000;
// What one parked request is taken to cost in the memory term of max_parked_requests'
// default: its context, request and reply, or the touched part of a fiber stack, generously.
constexpr uint64_t kParkedRequestBytes = 64 * 1024;

// server.max_parked_requests when it is 0: a quarter of the usable memory at
// kParkedRequestBytes each (at least 1024), and no more than any thread model the services
// run on can hold (fiber: the stacks vm.max_map_count leaves).
uint64_t DefaultParkedLimit(const ServerConfig& config) {
  uint64_t usable = UsableMemoryBytes();
  uint64_t limit = usable == 0 ? 65536 : std::max<uint64_t>(1024, usable / 4 / kParkedRequestBytes);
  for (const ServiceConfig& sc : config.service) {
    ThreadModel* model = runtime::GetThreadModel(sc.threadmodel_instance_name);
    uint64_t capacity = model != nullptr ? model->ParkedCapacity() : 0;
    if (capacity != 0) limit = std::min(limit, capacity);
  }
  return limit;
}

// Filter chains live as long as the process: a reply sent late (after a graceful stop gave up
// waiting) still reads its service's chain. A few bytes per service start.
const detail::ServerFilterChain* KeepChain(std::unique_ptr<detail::ServerFilterChain> chain) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<detail::ServerFilterChain>>* chains =
      new std::vector<std::unique_ptr<detail::ServerFilterChain>>();
  std::lock_guard lock(mu);
  chains->push_back(std::move(chain));
  return chains->back().get();
}
}  // namespace

Server::Server(ServerConfig config) : config_(std::move(config)) {}

Server::~Server() { Stop(); }

bool Server::RegisterService(const std::string& name, ServicePtr service) {
  return services_.emplace(name, std::move(service)).second;
}

bool Server::Start(std::string* err) {
  uint64_t limit =
      config_.max_buffered_bytes != 0 ? config_.max_buffered_bytes : DefaultBufferLimit();
  budget_ = std::make_shared<BufferBudget>(limit, int64_t{config_.buffered_bytes_timeout});
  // Before the first listener opens: every request admitted counts.
  detail::ParkedWork::Instance().SetLimit(
      config_.max_parked_requests != 0 ? config_.max_parked_requests : DefaultParkedLimit(config_));
  // A file left by a run that did not stop cleanly must not pass for this run's.
  if (!config_.listen_file.empty() && !detail::RemoveListenFile(config_.listen_file, err)) {
    *err = ListenFileError(*err);
    return false;
  }
  if (!StartServices(err) || !StartSideServices(err) || !RegisterInstances(err) ||
      !WriteListenFile(err)) {
    Stop();  // what did start must not keep listening
    return false;
  }
  SetReadiness(Readiness::kServing);
  return true;
}

std::function<void()> Server::WatchReadiness(std::function<void(Readiness)> fn) {
  std::shared_ptr<ReadinessWatchers> w = readiness_watchers_;
  std::lock_guard<std::mutex> lock(w->mu);
  const uint64_t id = w->next++;
  w->fns.emplace(id, std::make_shared<std::function<void(Readiness)>>(std::move(fn)));
  return [weak = std::weak_ptr<ReadinessWatchers>(w), id] {
    if (auto w = weak.lock()) {
      std::lock_guard<std::mutex> lock(w->mu);
      w->fns.erase(id);
    }
  };
}

void Server::SetReadiness(Readiness r) {
  if (readiness_.exchange(r, std::memory_order_acq_rel) == r) return;
  // Called without the lock (a watcher may unwatch from inside), from a copy of the list.
  std::vector<std::shared_ptr<std::function<void(Readiness)>>> watchers;
  {
    std::lock_guard<std::mutex> lock(readiness_watchers_->mu);
    for (const auto& [id, fn] : readiness_watchers_->fns) watchers.push_back(fn);
  }
  for (const auto& fn : watchers) (*fn)(r);
}

std::string Server::ListenFileError(const std::string& why) const {
  std::string at = !config_.listen_file_origin.empty() ? config_.listen_file_origin + ": "
                   : !config_.origin.empty()           ? config_.origin + ": "
                                                       : "";
  return at + "server.listen_file: " + why;
}

bool Server::WriteListenFile(std::string* err) {
  if (config_.listen_file.empty()) return true;
  // The configured services in the config's order, then the side services (the admin last).
  detail::Listeners listeners;
  for (const ServiceConfig& sc : config_.service) {
    if (const detail::ServiceAdapter* a = GetAdapter(sc.name)) {
      listeners.emplace_back(sc.name, a->address());
    }
  }
  for (const RunningSide& r : sides_) {
    if (!r.adapter) continue;
    const std::string& name = r.side.config.name;
    listeners.emplace_back(name == kAdminServiceName ? "admin" : name, r.adapter->address());
  }
  if (!detail::WriteListenFile(config_.listen_file, detail::FormatListenFile(listeners), err)) {
    *err = ListenFileError(*err);
    return false;
  }
  listen_file_written_ = true;
  TRPC_LOG_INFO("listen file {} written ({} listeners)", config_.listen_file, listeners.size());
  return true;
}

ServicePtr Server::GetService(const std::string& name) const {
  auto it = services_.find(name);
  return it == services_.end() ? nullptr : it->second;
}

bool Server::AddSideService(SideService side) {
  if (HasSideService(side.config.name) ||
      config_.service.end() !=
          std::find_if(config_.service.begin(), config_.service.end(),
                       [&](const ServiceConfig& sc) { return sc.name == side.config.name; })) {
    return false;
  }
  sides_.push_back(RunningSide{std::move(side), nullptr, nullptr});
  return true;
}

bool Server::HasSideService(const std::string& name) const {
  return std::any_of(sides_.begin(), sides_.end(),
                     [&](const RunningSide& r) { return r.side.config.name == name; });
}

bool Server::StartSideServices(std::string* err) {
  if (config_.admin_enabled() && !HasSideService(kAdminServiceName)) {
    *err =
        "server.admin_port is set but the admin service was not added: call "
        "trpc::admin::EnableAdmin(&server) before Start() (TrpcApp does)";
    return false;
  }
  for (RunningSide& r : sides_) {
    const ServiceConfig& sc = r.side.config;
    auto codec = CodecRegistry::Instance().GetServer(sc.protocol);
    if (!codec) {
      *err = "service " + sc.name + ": protocol '" + sc.protocol + "' is not linked";
      return false;
    }
    // Its own thread, so that it answers while every worker of the services is busy.
    r.model = std::make_unique<MergeThreadModel>(sc.threadmodel_instance_name, 1);
    if (!r.model->Start(err)) return false;
    static const detail::ServerFilterChain* no_filters =
        KeepChain(std::make_unique<detail::ServerFilterChain>());
    r.adapter = std::make_unique<detail::ServiceAdapter>(sc, r.side.service, r.model.get(), codec,
                                                         no_filters);
    r.adapter->SetBufferBudget(budget_);
    r.adapter->SetSilentTimeout(r.side.silent_timeout_ms);
    if (r.side.evict_idle_when_full) r.adapter->EvictIdleWhenFull();
    if (!r.adapter->Start(err)) {
      r.adapter.reset();
      return false;
    }
  }
  return true;
}

void Server::StopSideServices() {
  for (RunningSide& r : sides_) {
    if (r.side.before_stop) r.side.before_stop();
    bool stuck = false;
    if (r.adapter) {
      int64_t wait_ms = std::min<int64_t>(config_.stop_max_wait_time, kSideStopWaitMs);
      stuck = !r.adapter->StopBy(MonotonicNanos() + wait_ms * kNanosPerMilli);
      NoteStopped(std::move(r.adapter));
    }
    if (r.model) {
      // A thread stuck in a handler cannot be joined: its model is kept, running.
      if (stuck) {
        Keep(std::move(r.model));
      } else {
        r.model->Stop();
        r.model.reset();
      }
    }
  }
}

void Server::NoteStopped(std::unique_ptr<detail::ServiceAdapter> adapter) {
  stop_outcome_.calls_cut += adapter->calls_cut();
  stop_outcome_.workers_stuck += adapter->workers_stuck();
  // Handlers it gave up on may still return into it, and a stuck worker's connections still
  // call it whenever that worker comes back: kept. So is one whose stream handlers have not
  // ended: the stop reset their streams, but each still ends through the adapter's path (its
  // limiter, counters, filters) when it returns.
  if (adapter->workers_stuck() > 0 || adapter->calls_cut() > 0 ||
      adapter->stream_handlers_running() > 0) {
    Keep(std::move(adapter));
  }
}

template <typename T>
void Server::Keep(std::unique_ptr<T> kept) {
  // Reachable for good, so leak checkers do not report what is kept on purpose.
  static std::mutex mu;
  static auto* all = new std::vector<std::shared_ptr<void>>();
  std::lock_guard lock(mu);
  all->push_back(std::shared_ptr<T>(std::move(kept)));
}

ServerMetrics Server::GetMetrics() const {
  ServerMetrics m;
  m.app = config_.app;
  m.server = config_.server;
  if (budget_) {
    m.buffers.limit = budget_->limit();
    m.buffers.buffered = budget_->total();
    m.buffers.paused_total = budget_->paused_total();
    m.buffers.closed_over_limit = budget_->closed_over_limit();
    m.buffers.memory_releases = budget_->releases();
  }
  m.parked.limit = detail::ParkedWork::Instance().limit();
  m.parked.taken = detail::ParkedWork::Instance().Taken();
  std::vector<ThreadModel*> models;
  auto add = [&](const detail::ServiceAdapter& a) {
    a.CollectMetrics(&m.services.emplace_back());
    if (std::find(models.begin(), models.end(), a.model()) == models.end()) {
      models.push_back(a.model());
    }
  };
  for (const auto& [name, adapter] : adapters_) add(*adapter);
  for (const RunningSide& r : sides_) {
    if (r.adapter) add(*r.adapter);
  }
  for (ThreadModel* model : models) {
    ThreadModelMetrics& t = m.thread_models.emplace_back();
    t.name = model->InstanceName();
    t.type = std::string(model->Type());
    t.workers = model->ReactorCount();
    ThreadModel::FiberStats fibers;
    if (model->GetFiberStats(&fibers)) {
      t.has_fibers = true;
      t.fibers_alive = fibers.alive;
      t.run_queue_depth = fibers.run_queue_depth;
      t.steals = fibers.steals;
      t.remote_steals = fibers.remote_steals;
      t.stack_waits = fibers.stack_waits;
      t.parks = fibers.parks;
      t.wakeups = fibers.wakeups;
      t.spin_ns = fibers.spin_ns;
    }
    for (size_t i = 0; i < t.workers; ++i) {
      Reactor::Counters c = model->GetReactor(i)->counters();
      t.loop_wakeups += c.wakeups;
      t.cross_thread_replies += c.foreign_replies;
    }
  }
  return m;
}

bool Server::StartServices(std::string* err) {
  std::vector<std::string> registered;
  for (const auto& [name, service] : services_) registered.push_back(name);
  if (config_.service.empty() && !registered.empty()) {
    // The program means to serve, the config gives it nothing to serve on: it would start, say
    // it is ready, and serve nothing.
    std::string names;
    for (const std::string& name : registered) names += (names.empty() ? "'" : ", '") + name + "'";
    *err = (config_.origin.empty() ? "" : config_.origin + ": ") +
           "server.service is empty, so none of the registered services is served (" + names +
           "): configure them under server.service";
    return false;
  }
  // A registered service the config does not list is not served; likely a name mismatch.
  for (const auto& [name, service] : services_) {
    bool configured = false;
    for (const ServiceConfig& sc : config_.service) configured |= sc.name == name;
    if (!configured) {
      TRPC_LOG_WARN("service '{}' is registered but not in server.service: it is not served", name);
    }
  }
  for (const ServiceConfig& sc : config_.service) {
    // Errors about a config entry point at it: "file:line: ...".
    std::string where = sc.origin.empty() ? "" : sc.origin + ": ";
    auto it = services_.find(sc.name);
    if (it == services_.end()) {
      *err = where + "service '" + sc.name +
             "' is configured but no implementation was registered under that name" +
             RegisteredNamesHint(sc.name, registered);
      return false;
    }
    auto codec = CodecRegistry::Instance().GetServer(sc.protocol);
    if (!codec) {
      *err = where + "service '" + sc.name + "': unknown protocol '" + sc.protocol + "'" +
             RegisteredNamesHint(sc.protocol, CodecRegistry::Instance().ServerNames());
      return false;
    }
    if (!sc.protocol_options.empty()) {
      std::string key, why;
      codec = codec->WithOptions(sc.protocol_options, &key, &why);
      if (!codec) {
        auto at = sc.protocol_option_origin.find(key);
        std::string loc = at != sc.protocol_option_origin.end() ? at->second + ": " : where;
        *err = loc + "service '" + sc.name + "': protocol_options." + key + ": " + why;
        return false;
      }
    }
    {
      std::vector<std::string> stream_funcs;
      std::vector<std::string> all_funcs;
      it->second->ForEachMethod([&](const std::string& name, const RpcMethodHandler* h) {
        if (h->IsStream()) stream_funcs.push_back(name);
        all_funcs.push_back(name);
      });
      const bool closed = it->second->RoutesOnlyItsMethods();
      if (auto with = codec->WithStreamMethods(stream_funcs, closed ? &all_funcs : nullptr)) {
        codec = std::move(with);
      }
    }
    ThreadModel* model = runtime::GetThreadModel(sc.threadmodel_instance_name);
    if (model == nullptr) {
      *err = where + "service '" + sc.name + "': no thread model '" + sc.threadmodel_instance_name +
             "' is running";
      return false;
    }
    // server.filter first, then the service's own.
    auto chain = std::make_unique<detail::ServerFilterChain>();
    std::string missing;
    if (!chain->Build(config_.filter, &missing)) {
      std::string at = config_.filter_origin.empty() ? where : config_.filter_origin + ": ";
      *err = at + "server.filter: no server filter named '" + missing + "' is registered" +
             chain->UnknownNameHint(missing);
      return false;
    }
    if (!chain->Build(sc.filter, &missing)) {
      *err = where + "service '" + sc.name + "': no server filter named '" + missing +
             "' is registered" + chain->UnknownNameHint(missing);
      return false;
    }
    auto adapter = std::make_unique<detail::ServiceAdapter>(sc, it->second, model, codec,
                                                            KeepChain(std::move(chain)));
    adapter->SetBufferBudget(budget_);
    adapter->SetParkedBound(true);
    if (!adapter->Start(err)) {
      // (An error that names its own key's place, a TLS file's, keeps it alone.)
      const std::string file = sc.origin.substr(0, sc.origin.rfind(':') + 1);
      if (file.empty() || err->rfind(file, 0) != 0) *err = where + *err;
      return false;
    }
    adapters_[sc.name] = std::move(adapter);
  }
  return true;
}

bool Server::RegisterInstances(std::string* err) {
  if (config_.registry_name.empty()) return true;
  std::string why;
  registry_ = RegistryFactory::Get(config_.registry_name, &why);
  if (!registry_) {
    *err = (config_.origin.empty() ? "" : config_.origin + ": ") + "server.registry_name: " + why;
    return false;
  }
  for (const ServiceConfig& sc : config_.service) {
    const detail::ServiceAdapter* adapter = GetAdapter(sc.name);
    if (adapter == nullptr) continue;
    RegistryInstance inst;
    inst.name_space = sc.name_space;
    inst.service = sc.name;
    inst.weight = sc.weight;
    inst.addr = adapter->address();
    std::string where = sc.origin.empty() ? "" : sc.origin + ": ";
    if (!sc.advertise_ip.empty()) {
      NetAddress::FromIpPort(sc.advertise_ip, inst.addr.port(), &inst.addr);
    } else if (inst.addr.IsUnspecified()) {
      *err = where + "service " + sc.name + " listens on " + inst.addr.ToString() +
             ", which callers cannot reach: set advertise_ip to register it";
      return false;
    }
    if (!registry_->Register(inst, &why)) {
      *err = where + "service " + sc.name + ": cannot register with " + config_.registry_name +
             ": " + why;
      return false;
    }
    TRPC_LOG_INFO("service {} registered with {} as {}", sc.name, config_.registry_name,
                  inst.addr.ToString());
    registered_.push_back(std::move(inst));
  }
  return true;
}

void Server::DeregisterInstances() {
  if (registered_.empty()) return;
  for (const RegistryInstance& inst : registered_) {
    std::string why;
    if (!registry_->Deregister(inst, &why)) {
      TRPC_LOG_WARN("service {}: deregistering from {} failed: {}", inst.service,
                    config_.registry_name, why);
    }
  }
  registered_.clear();
  // Callers learn of it through their watches; until then they may still send, and are served.
  if (config_.deregister_wait > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(config_.deregister_wait));
  }
}

void Server::Stop() {
  SetReadiness(Readiness::kStopping);
  DeregisterInstances();
  int64_t deadline = MonotonicNanos() + int64_t{config_.stop_max_wait_time} * kNanosPerMilli;
  // Side services first: the admin service reads the adapters below.
  StopSideServices();
  // One budget for the whole server: every service stops accepting at once, then each waits
  // until the same deadline.
  for (auto& [name, adapter] : adapters_) adapter->StopAccepting(deadline);
  for (auto& [name, adapter] : adapters_) {
    adapter->StopBy(deadline);
    NoteStopped(std::move(adapter));
  }
  adapters_.clear();
  // Last, once the listeners are closed: a script that sees the file gone may reuse the ports.
  if (listen_file_written_) {
    listen_file_written_ = false;
    std::string why;
    if (!detail::RemoveListenFile(config_.listen_file, &why)) {
      TRPC_LOG_WARN("server.listen_file: {}", why);
    }
  }
}

bool Server::GetAddress(const std::string& name, NetAddress* out) const {
  const detail::ServiceAdapter* adapter = GetAdapter(name);
  if (adapter == nullptr) return false;
  *out = adapter->address();
  return true;
}

const detail::ServiceAdapter* Server::GetAdapter(const std::string& name) const {
  if (auto it = adapters_.find(name); it != adapters_.end()) return it->second.get();
  for (const RunningSide& r : sides_) {
    if (r.side.config.name == name) return r.adapter.get();
  }
  return nullptr;
}

}  // namespace trpc
