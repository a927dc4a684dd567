#include "trpc/naming/etcd/detail/etcd_naming.h"

#include <mutex>

#include "trpc/naming/etcd/detail/etcd_registry.h"
#include "trpc/naming/etcd/detail/etcd_selector.h"
#include "trpc/naming/registry.h"
#include "trpc/naming/selector.h"

namespace trpc::naming {

void RegisterEtcdNaming() {
  static std::once_flag once;
  std::call_once(once, [] {
    SelectorFactory::Register("etcd",
                              [] { return std::make_unique<etcd::detail::EtcdSelector>(); });
    RegistryFactory::Register("etcd",
                              [] { return std::make_unique<etcd::detail::EtcdRegistry>(); });
  });
}

}  // namespace trpc::naming
