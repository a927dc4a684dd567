#include "trpc/codec/detail/stream_session.h"

namespace trpc {

void AttachWriteOptions(const stream::WriteOptions& opts, ChainBuffer* bytes) {
  if (!opts.no_compression) return;
  auto meta = std::make_unique<StreamMessageOptions>();
  meta->no_compression = true;
  bytes->SetMeta(std::move(meta));
}

}  // namespace trpc
