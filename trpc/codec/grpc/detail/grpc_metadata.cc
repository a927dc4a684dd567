#include "trpc/codec/grpc/detail/grpc_metadata.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "trpc/codec/grpc/detail/grpc_wire.h"
#include "trpc/codec/grpc/grpc_message.h"

namespace trpc::grpc::detail {

namespace {

bool IsReservedKey(std::string_view k) {
  return k.empty() || k[0] == ':' || k.substr(0, 5) == "grpc-" || k == "content-type" ||
         k == "te" || k == "user-agent" || k == "host" || k == "connection";
}

}  // namespace

void ToHeaders(const TransInfo& info, Pairs* out) {
  for (const auto& [key, value] : info) {
    std::string k = key;
    bool ok = true;
    for (char& c : k) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
        ok = false;
      }
    }
    if (!ok || IsReservedKey(k)) continue;
    if (k.size() > 4 && k.compare(k.size() - 4, 4, "-bin") == 0) {
      out->emplace_back(std::move(k), detail::Base64Encode(value));
      continue;
    }
    for (char c : value) {
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) ok = false;
    }
    if (ok) out->emplace_back(std::move(k), value);
  }
}

// Header fields -> trans_info ("-bin" values decoded; undecodable ones dropped).
void FromHeaders(Pairs&& fields, TransInfo* out) {
  for (auto& [k, v] : fields) {
    if (k.size() > 4 && k.compare(k.size() - 4, 4, "-bin") == 0) {
      std::string raw;
      if (detail::Base64Decode(v, &raw)) (*out)[k] = std::move(raw);
      continue;
    }
    (*out)[std::move(k)] = std::move(v);
  }
}

void RequestFromHead(ServerRequestMeta&& head, RpcRequest* req) {
  req->request_id = static_cast<uint32_t>(head.stream_id);
  req->call_type = kUnaryCall;
  req->func = std::move(head.path);
  req->content_type =
      head.content_type == "application/grpc+json" ? kContentTypeJson : kContentTypeProtobuf;
  if (!head.timeout.empty()) {
    int64_t ns = 0;
    if (ParseTimeout(head.timeout, &ns)) {
      int64_t ms = (ns + 999'999) / 1'000'000;
      req->timeout_ms = static_cast<uint32_t>(std::clamp<int64_t>(ms, 1, UINT32_MAX));
    }
  }
  FromHeaders(std::move(head.metadata), &req->trans_info);
  req->echo_trans_info = false;
  auto info = std::make_unique<GrpcRequestInfo>();
  info->compressed = head.compressed;
  info->encoding = std::move(head.encoding);
  info->accept_encoding = std::move(head.accept_encoding);
  info->authority = std::move(head.authority);
  req->cancel_signal = head.cancelled;
  info->cancelled = std::move(head.cancelled);
  req->protocol = std::move(info);
}

}  // namespace trpc::grpc::detail
