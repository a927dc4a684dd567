#include "trpc/app/detail/naming_plugins.h"

#include <algorithm>
#include <mutex>

#include "trpc/base/suggest.h"
#include "trpc/naming/dns/detail/dns_selector.h"
#include "trpc/naming/etcd/detail/etcd_naming.h"
#include "trpc/naming/lb/detail/load_balancers.h"
#include "trpc/naming/registry.h"
#include "trpc/naming/selector.h"

namespace trpc::naming {

void RegisterNamingPlugins() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterLoadBalancers();
    RegisterDnsSelector();
    RegisterEtcdNaming();
  });
}

namespace {
bool CheckNames(const std::map<std::string, PluginOptions>& sections, const char* kind,
                const std::vector<std::string>& registered, std::string* err) {
  for (const auto& [name, options] : sections) {
    if (std::find(registered.begin(), registered.end(), name) == registered.end()) {
      *err = (options.section_origin.empty() ? "" : options.section_origin + ": ") + "plugins." +
             kind + "." + name + ": no " + kind + " named '" + name + "' is registered" +
             RegisteredNamesHint(name, registered);
      return false;
    }
  }
  return true;
}
}  // namespace

bool ConfigureNamingPlugins(const PluginsConfig& plugins, std::string* err) {
  if (!CheckNames(plugins.selector, "selector", SelectorFactory::Names(), err) ||
      !CheckNames(plugins.registry, "registry", RegistryFactory::Names(), err)) {
    return false;
  }
  SelectorFactory::SetOptions(plugins.selector);
  RegistryFactory::SetOptions(plugins.registry);
  return true;
}

void StopNamingPlugins() {
  SelectorFactory::StopAll();
  RegistryFactory::StopAll();
}

}  // namespace trpc::naming
