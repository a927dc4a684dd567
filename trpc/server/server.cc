#include "trpc/server/server.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/codec.h"
#include "trpc/runtime/fiber_thread_model.h"
#include "trpc/runtime/merge_thread_model.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/detail/admin_plugin.h"
#include "trpc/server/detail/service_adapter.h"

namespace trpc {

namespace detail {
namespace {
std::atomic<AdminFactory> g_admin_factory{nullptr};
}  // namespace

void SetAdminFactory(AdminFactory factory) {
  g_admin_factory.store(factory, std::memory_order_release);
}
AdminFactory GetAdminFactory() { return g_admin_factory.load(std::memory_order_acquire); }
}  // namespace detail

namespace {
constexpr char kAdminServiceName[] = "trpc.admin";
constexpr char kAdminThreadModelName[] = "trpc_admin";
// The admin service's limits: a few operators and scrapers, small requests.
constexpr uint32_t kAdminMaxConnections = 64;
constexpr uint32_t kAdminMaxPacketSize = 1 << 20;
constexpr int64_t kAdminStopWaitMs = 1000;

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
  if (!StartServices(err) || !StartAdmin(err)) {
    Stop();  // what did start must not keep listening
    return false;
  }
  return true;
}

void Server::EnableAdmin(std::string ip, uint16_t port) {
  admin_forced_ = true;
  admin_ip_ = std::move(ip);
  admin_port_ = port;
}

bool Server::StartAdmin(std::string* err) {
  if (!admin_forced_ && config_.admin_port == 0) return true;
  detail::AdminFactory factory = detail::GetAdminFactory();
  if (factory == nullptr) {
    *err = "server.admin_port is set but the admin service is not linked (link trpc::trpc)";
    return false;
  }
  detail::AdminEndpoint admin = factory(this);
  auto codec = CodecRegistry::Instance().GetServer(admin.protocol);
  if (!codec) {
    *err = "admin service: protocol '" + admin.protocol + "' is not linked";
    return false;
  }
  ServiceConfig sc;
  sc.name = kAdminServiceName;
  sc.protocol = admin.protocol;
  sc.ip = admin_forced_ ? admin_ip_ : config_.admin_ip;
  sc.port = admin_forced_ ? admin_port_ : config_.admin_port;
  sc.max_conn_num = kAdminMaxConnections;
  sc.max_packet_size = kAdminMaxPacketSize;
  sc.timeout = 0;  // a CPU profile takes seconds
  // Its own thread, so that it answers while every worker of the services is busy.
  admin_model_ = std::make_unique<MergeThreadModel>(kAdminThreadModelName, 1);
  if (!admin_model_->Start(err)) return false;
  static const detail::ServerFilterChain* no_filters =
      KeepChain(std::make_unique<detail::ServerFilterChain>());
  auto adapter = std::make_unique<detail::ServiceAdapter>(sc, admin.service, admin_model_.get(),
                                                          codec, no_filters);
  admin_before_stop_ = std::move(admin.before_stop);
  if (!adapter->Start(err)) {
    *err = "admin service: " + *err;
    return false;
  }
  admin_adapter_ = std::move(adapter);
  return true;
}

void Server::StopAdmin() {
  if (admin_before_stop_) admin_before_stop_();
  admin_before_stop_ = nullptr;
  if (admin_adapter_) {
    admin_adapter_->Stop(std::min<int64_t>(config_.stop_max_wait_time, kAdminStopWaitMs));
    admin_adapter_.reset();
  }
  if (admin_model_) {
    admin_model_->Stop();
    admin_model_.reset();
  }
}

bool Server::GetAdminAddress(NetAddress* out) const {
  if (!admin_adapter_) return false;
  *out = admin_adapter_->address();
  return true;
}

ServerMetrics Server::GetMetrics() const {
  ServerMetrics m;
  m.app = config_.app;
  m.server = config_.server;
  std::vector<ThreadModel*> models;
  auto add = [&](const detail::ServiceAdapter& a) {
    a.CollectMetrics(&m.services.emplace_back());
    if (std::find(models.begin(), models.end(), a.model()) == models.end()) {
      models.push_back(a.model());
    }
  };
  for (const auto& [name, adapter] : adapters_) add(*adapter);
  if (admin_adapter_) add(*admin_adapter_);
  for (ThreadModel* model : models) {
    ThreadModelMetrics& t = m.thread_models.emplace_back();
    t.name = model->InstanceName();
    t.type = std::string(model->Type());
    t.workers = model->ReactorCount();
    if (model->Type() == "fiber") {
      fiber::SchedulerStats st = static_cast<FiberThreadModel*>(model)->scheduler()->Stats();
      t.has_fibers = true;
      // Relaxed sums over the workers: a fiber's finish may be seen before its start.
      t.fibers_alive =
          st.fibers_started > st.fibers_finished ? st.fibers_started - st.fibers_finished : 0;
      t.run_queue_depth = st.run_queue_depth;
    }
  }
  return m;
}

bool Server::StartServices(std::string* err) {
  // A registered service the config does not list is not served; likely a name mismatch.
  for (const auto& [name, service] : services_) {
    bool configured = false;
    for (const ServiceConfig& sc : config_.service) configured |= sc.name == name;
    if (!configured) {
      TRPC_LOG_WARN("service '{}' is registered but not in server.service: it is not served",
                    name);
    }
  }
  for (const ServiceConfig& sc : config_.service) {
    // Errors about a config entry point at it: "file:line: ...".
    std::string where = sc.origin.empty() ? "" : sc.origin + ": ";
    auto it = services_.find(sc.name);
    if (it == services_.end()) {
      *err = where + "service '" + sc.name + "' is configured but no implementation was registered";
      return false;
    }
    auto codec = CodecRegistry::Instance().GetServer(sc.protocol);
    if (!codec) {
      *err = where + "service '" + sc.name + "': unknown protocol '" + sc.protocol + "'";
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
    ThreadModel* model = runtime::GetThreadModel(sc.threadmodel_instance_name);
    if (model == nullptr) {
      *err = where + "service '" + sc.name + "': no thread model '" +
             sc.threadmodel_instance_name + "' is running";
      return false;
    }
    // server.filter first, then the service's own.
    auto chain = std::make_unique<detail::ServerFilterChain>();
    std::string missing;
    if (!chain->Build(config_.filter, &missing)) {
      std::string at = config_.filter_origin.empty() ? where : config_.filter_origin + ": ";
      *err = at + "server.filter: no server filter named '" + missing + "' is registered";
      return false;
    }
    if (!chain->Build(sc.filter, &missing)) {
      *err = where + "service '" + sc.name + "': no server filter named '" + missing +
             "' is registered";
      return false;
    }
    auto adapter = std::make_unique<detail::ServiceAdapter>(sc, it->second, model, codec,
                                                            KeepChain(std::move(chain)));
    if (!adapter->Start(err)) {
      *err = where + *err;
      return false;
    }
    adapters_[sc.name] = std::move(adapter);
  }
  return true;
}

void Server::Stop() {
  // The admin service first: it reads the adapters below.
  StopAdmin();
  // One budget for the whole server: every service stops accepting at once, then each waits
  // for what is left of the time.
  for (auto& [name, adapter] : adapters_) adapter->StopAccepting();
  int64_t deadline = MonotonicNanos() + int64_t{config_.stop_max_wait_time} * kNanosPerMilli;
  for (auto& [name, adapter] : adapters_) {
    adapter->Stop(std::max<int64_t>(0, (deadline - MonotonicNanos()) / kNanosPerMilli));
  }
  adapters_.clear();
}

bool Server::GetAddress(const std::string& name, NetAddress* out) const {
  auto it = adapters_.find(name);
  if (it == adapters_.end()) return false;
  *out = it->second->address();
  return true;
}

const detail::ServiceAdapter* Server::GetAdapter(const std::string& name) const {
  auto it = adapters_.find(name);
  return it == adapters_.end() ? nullptr : it->second.get();
}

}  // namespace trpc
