#include "trpc/naming/registry.h"

namespace trpc {

template <>
PluginTable<Registry>& PluginFactory<Registry>::Table() {
  static auto* table = new PluginTable<Registry>("registry");
  return *table;
}

}  // namespace trpc
