#include "trpc/codec/detail/codec.h"

namespace trpc {

CodecRegistry& CodecRegistry::Instance() {
  static CodecRegistry* r = new CodecRegistry;  // never destroyed: used until exit
  return *r;
}

void CodecRegistry::RegisterServer(std::string name, std::shared_ptr<ServerCodec> codec) {
  server_[std::move(name)] = std::move(codec);
}

void CodecRegistry::RegisterClient(std::string name, std::shared_ptr<ClientCodec> codec) {
  client_[std::move(name)] = std::move(codec);
}

std::shared_ptr<ServerCodec> CodecRegistry::GetServer(std::string_view name) const {
  auto it = server_.find(name);
  return it == server_.end() ? nullptr : it->second;
}

std::shared_ptr<ClientCodec> CodecRegistry::GetClient(std::string_view name) const {
  auto it = client_.find(name);
  return it == client_.end() ? nullptr : it->second;
}

namespace {
template <typename Map>
std::vector<std::string> KeysOf(const Map& m) {
  std::vector<std::string> names;
  for (const auto& [name, codec] : m) names.push_back(name);
  return names;
}
}  // namespace

std::vector<std::string> CodecRegistry::ServerNames() const { return KeysOf(server_); }

std::vector<std::string> CodecRegistry::ClientNames() const { return KeysOf(client_); }

}  // namespace trpc
