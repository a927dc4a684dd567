#pragma once

#include "trpc/codec/grpc/detail/call_meta.h"
#include "trpc/codec/rpc_message.h"

namespace trpc::grpc::detail {

// The conversions between gRPC's header fields and the framework's request parts, shared by
// the codec (unary calls) and the stream sessions.

/// trans_info -> header fields: keys lower-cased and checked, "-bin" values base64, other
/// values printable ASCII only (what HTTP/2 field values allow). Entries that cannot be sent
/// are skipped.
void ToHeaders(const TransInfo& info, Pairs* out);
/// Header fields -> trans_info ("-bin" values decoded; undecodable ones dropped).
void FromHeaders(Pairs&& fields, TransInfo* out);
/// A request's headers as the server's request (func, content type, deadline, trans_info and
/// the gRPC part); the body is the caller's to set.
void RequestFromHead(ServerRequestMeta&& head, RpcRequest* req);

}  // namespace trpc::grpc::detail
