#include "trpc/server/rpc_method_handler.h"

#include <google/protobuf/message_lite.h>

namespace trpc::detail {

bool ParseMessage(const ChainBuffer& body, google::protobuf::MessageLite* msg) {
  if (body.SpanCount() <= 1) {
    std::string_view s = body.FirstSpan();
    return msg->ParseFromArray(s.data(), static_cast<int>(s.size()));
  }
  ChainBufferInputStream in(&body);
  return msg->ParseFromZeroCopyStream(&in);
}

}  // namespace trpc::detail
