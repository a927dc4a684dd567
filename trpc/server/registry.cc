#include "trpc/server/registry.h"

#include "trpc/config/plugin_table.h"

namespace trpc {

namespace {
PluginTable<Registry>& Table() {
  static auto* table = new PluginTable<Registry>("registry");
  return *table;
}
}  // namespace

void RegistryFactory::Register(std::string name, Maker make) {
  Table().Register(std::move(name), std::move(make));
}
void RegistryFactory::SetOptions(std::map<std::string, PluginOptions> options) {
  Table().SetOptions(std::move(options));
}
std::shared_ptr<Registry> RegistryFactory::Get(std::string_view name, std::string* err) {
  return Table().Get(name, err);
}
std::vector<std::string> RegistryFactory::Names() { return Table().Names(); }
void RegistryFactory::StopAll() { Table().StopAll(); }

}  // namespace trpc
