#include "trpc/client/detail/backend.h"

#include "trpc/runtime/detail/thread_model.h"

namespace trpc::detail {

Backend::Backend(const Endpoint& e, ThreadModel* m, uint32_t conns_per_reactor)
    : addr(e.addr), name(e.addr.ToString()), weight(e.weight), model(m) {
  const size_t reactors = m != nullptr ? m->ReactorCount() : 0;
  conns.resize(reactors);
  for (auto& per : conns) per.resize(conns_per_reactor);
  pools.resize(reactors);
}

Backend::~Backend() {
  for (size_t i = 0; i < conns.size(); ++i) {
    bool any = pools[i] != nullptr;
    for (const auto& c : conns[i]) any = any || c != nullptr;
    if (!any) continue;
    std::shared_ptr<ClientConnectionPool> pool(pools[i].release());
    // Both go with the task, so they are destroyed on their reactor.
    model->GetReactor(i)->Post([c = std::move(conns[i]), pool = std::move(pool)] {
      for (const auto& conn : c) {
        if (conn) conn->Close("endpoint removed");
      }
      if (pool) pool->Close("endpoint removed");
    });
  }
}

}  // namespace trpc::detail
