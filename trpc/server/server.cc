#include "trpc/server/server.h"

#include "trpc/codec/codec.h"
#include "trpc/runtime/runtime.h"
#include "trpc/server/detail/service_adapter.h"

namespace trpc {

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
    ThreadModel* model = runtime::GetThreadModel(sc.threadmodel_instance_name);
    if (model == nullptr) {
      *err = where + "service '" + sc.name + "': no thread model '" +
             sc.threadmodel_instance_name + "' is running";
      return false;
    }
    auto adapter = std::make_unique<detail::ServiceAdapter>(sc, it->second, model, codec);
    if (!adapter->Start(err)) {
      *err = where + *err;
      return false;
    }
    adapters_[sc.name] = std::move(adapter);
  }
  return true;
}

void Server::Stop() {
  for (auto& [name, adapter] : adapters_) adapter->Stop();
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
