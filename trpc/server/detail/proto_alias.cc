#include "trpc/server/detail/proto_alias.h"

#include <mutex>

namespace trpc::detail {

namespace {
std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
std::vector<ProtoAlias>& Aliases() {
  static std::vector<ProtoAlias>* aliases = new std::vector<ProtoAlias>();  // never freed
  return *aliases;
}
}  // namespace

void RegisterProtoAlias(ProtoAlias alias) {
  std::lock_guard<std::mutex> lock(Mu());
  for (const ProtoAlias& a : Aliases()) {
    if (a.name == alias.name) return;
  }
  Aliases().push_back(std::move(alias));
}

std::vector<ProtoAlias> ProtoAliases() {
  std::lock_guard<std::mutex> lock(Mu());
  return Aliases();
}

}  // namespace trpc::detail
