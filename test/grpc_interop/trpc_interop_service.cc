#include "test/grpc_interop/trpc_interop_service.h"

#include <chrono>
#include <string>

#include "trpc/fiber/fiber.h"
#include "trpc/server/grpc/grpc_server.h"

namespace trpc::test::interop {

namespace {
// A call the client gave up: past its deadline (what a reset stream also means here), so
// DEADLINE_EXCEEDED, as the client's own timer would say; a reset stream's reply is dropped.
Status CancelledStatus() { return Status(kServerTimeoutErr, "cancelled while sleeping"); }

const std::string* Find(const TransInfo& info, const char* key) {
  auto it = info.find(key);
  return it == info.end() ? nullptr : &it->second;
}
}  // namespace

bool TestServiceImpl::SleepAsAsked(const ServerContextPtr& ctx) {
  const std::string* ms = Find(ctx->GetPbReqTransInfo(), "x-interop-sleep-ms");
  if (ms == nullptr) return true;
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(std::stoi(*ms));
  while (std::chrono::steady_clock::now() < until) {
    if (grpc::IsCancelled(*ctx)) {
      cancelled_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    fiber::this_fiber::SleepFor(std::chrono::milliseconds(5));
  }
  return true;
}

Status TestServiceImpl::EmptyCall(ServerContextPtr ctx, const ::grpc::testing::Empty*,
                                  ::grpc::testing::Empty*) {
  if (!SleepAsAsked(ctx)) return CancelledStatus();
  const std::string* q = Find(ctx->GetPbReqTransInfo(), "x-interop-query");
  if (q != nullptr && *q == "cancelled") {
    ctx->AddRspTransInfo("x-interop-cancelled", std::to_string(cancelled_seen()));
  }
  return kSuccStatus;
}

Status TestServiceImpl::UnaryCall(ServerContextPtr ctx, const ::grpc::testing::SimpleRequest* req,
                                  ::grpc::testing::SimpleResponse* rsp) {
  if (!SleepAsAsked(ctx)) return CancelledStatus();
  const grpc::GrpcRequestInfo* info = grpc::GetRequestInfo(*ctx);
  if (req->expect_compressed().value() && (info == nullptr || !info->compressed)) {
    return Status::AppError(3, "expected a compressed request");  // INVALID_ARGUMENT
  }
  // Metadata echo (custom_metadata): the initial key back in the headers, the -bin one in the
  // trailers.
  if (const std::string* v = Find(ctx->GetPbReqTransInfo(), "x-grpc-test-echo-initial")) {
    grpc::AddInitialMetadata(ctx.get(), "x-grpc-test-echo-initial", *v);
  }
  if (const std::string* v = Find(ctx->GetPbReqTransInfo(), "x-grpc-test-echo-trailing-bin")) {
    ctx->AddRspTransInfo("x-grpc-test-echo-trailing-bin", *v);
  }
  if (req->has_response_status() && req->response_status().code() != 0) {
    return Status::AppError(req->response_status().code(), req->response_status().message());
  }
  if (req->response_compressed().value()) grpc::SetResponseCompression(ctx.get(), "gzip");
  rsp->mutable_payload()->set_type(::grpc::testing::COMPRESSABLE);
  rsp->mutable_payload()->set_body(std::string(static_cast<size_t>(req->response_size()), '\0'));
  return kSuccStatus;
}

}  // namespace trpc::test::interop
