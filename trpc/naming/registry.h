#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trpc/base/net_address.h"
#include "trpc/naming/plugin_options.h"
#include "trpc/naming/plugin_table.h"

namespace trpc {

/// One served instance to make known to callers.
struct RegistryInstance {
  std::string name_space;  // server.service[].namespace ("default" when not set)
  std::string service;     // server.service[].name
  NetAddress addr;         // where callers reach it (a wildcard listen address is replaced by
                           // the registry's `advertise_ip`, or refused)
  uint32_t weight = 100;
  std::map<std::string, std::string> meta;
};

/// Makes a server's instances known to callers and keeps them known while it runs: a naming
/// plug-in, one instance per name per process (`server.registry_name`; settings in
/// `plugins.registry.<name>`). The naming plug-ins add "etcd" (trpc/app/detail/naming_plugins.h).
///
/// Thread contract: Init once; Register and Deregister from any thread; Stop once at exit
/// (it deregisters whatever is still registered).
class Registry {
 public:
  virtual ~Registry() = default;
  virtual std::string_view Name() const = 0;
  /// `options` are `plugins.registry.<name>`. False with "file:line: what is wrong".
  virtual bool Init(const PluginOptions& options, std::string* err) = 0;
  /// Registers `inst` and keeps it registered (heartbeats) until Deregister or Stop. Blocks
  /// until the registry has it, or fails with `*err` (unreachable registry, refused).
  virtual bool Register(const RegistryInstance& inst, std::string* err) = 0;
  /// Removes `inst` at once (callers stop choosing it as soon as they learn of it).
  virtual bool Deregister(const RegistryInstance& inst, std::string* err) = 0;
  virtual void Stop() {}
};

/// Registries by name; as SelectorFactory (trpc/naming/selector.h).
using RegistryFactory = PluginFactory<Registry>;
template <>
PluginTable<Registry>& PluginFactory<Registry>::Table();

}  // namespace trpc
