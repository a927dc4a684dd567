#include "trpc/server/server.h"

#include <mutex>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/base/logging.h"
#include "trpc/codec/codec.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/detail/service_adapter.h"

namespace trpc {

namespace {
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
  if (!StartServices(err)) {
    Stop();  // what did start must not keep listening
    return false;
  }
  return true;
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
