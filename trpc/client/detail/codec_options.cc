#include "trpc/client/detail/codec_options.h"

namespace trpc {

std::shared_ptr<ClientCodec> ClientCodecWithOptions(const std::shared_ptr<ClientCodec>& codec,
                                                    const ClientServiceConfig& config,
                                                    std::string* err) {
  std::string key, why;
  std::shared_ptr<ClientCodec> set = codec->WithOptions(config.protocol_options, &key, &why);
  if (set) return set;
  auto at = config.protocol_option_origin.find(key);
  std::string loc = at != config.protocol_option_origin.end()
                        ? at->second + ": "
                        : (config.origin.empty() ? "" : config.origin + ": ");
  *err = loc + "client service '" + config.name + "': protocol_options." + key + ": " + why;
  return nullptr;
}

}  // namespace trpc
