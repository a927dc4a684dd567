#include "test/grpc_interop/trpc_interop_service.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "trpc/base/clock.h"
#include "trpc/fiber/fiber.h"
#include "trpc/future/loop.h"
#include "trpc/reactor/reactor.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/server_stream.h"

namespace trpc::test::interop {

namespace {
// A call the client gave up: past its deadline (what a reset stream also means here), so
// DEADLINE_EXCEEDED, as the client's own timer would say; a reset stream's reply is dropped.
Status CancelledStatus() { return Status(kServerTimeoutErr, "cancelled while sleeping"); }

const std::string* Find(const TransInfo& info, const char* key) {
  auto it = info.find(key);
  return it == info.end() ? nullptr : &it->second;
}
using ::grpc::testing::StreamingInputCallRequest;
using ::grpc::testing::StreamingInputCallResponse;
using ::grpc::testing::StreamingOutputCallRequest;
using ::grpc::testing::StreamingOutputCallResponse;
using Writer = stream::AsyncStreamWriter<StreamingOutputCallResponse>;
using Duplex =
    stream::AsyncStreamReaderWriter<StreamingOutputCallRequest, StreamingOutputCallResponse>;

// Metadata echo (custom_metadata): the initial key back in the headers, the -bin one in the
// trailers.
void EchoMetadata(const ServerContextPtr& ctx) {
  if (const std::string* v = Find(ctx->GetPbReqTransInfo(), "x-grpc-test-echo-initial")) {
    grpc::AddInitialMetadata(ctx.get(), "x-grpc-test-echo-initial", *v);
  }
  if (const std::string* v = Find(ctx->GetPbReqTransInfo(), "x-grpc-test-echo-trailing-bin")) {
    ctx->AddRspTransInfo("x-grpc-test-echo-trailing-bin", *v);
  }
}

std::atomic<uint64_t> g_responses_written{0};

// A future that resolves `us` microseconds from now (interval_us) without blocking a reactor:
// a timer of the calling thread's reactor (the merged model runs handlers and their
// continuations there); elsewhere the calling fiber (or thread) sleeps.
Future<> After(int64_t us) {
  if (us <= 0) return MakeReadyFuture<>();
  if (Reactor* r = Reactor::Current()) {
    auto promise = std::make_shared<Promise<>>();
    Future<> f = promise->GetFuture();
    r->AddTimer(MonotonicNanos() + us * 1000, [promise] { promise->SetValue(); });
    return f;
  }
  if (fiber::IsFiberContext()) {
    fiber::this_fiber::SleepFor(std::chrono::microseconds(us));
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  return MakeReadyFuture<>();
}

// The responses `req` asks for, from its i-th parameter on: one per ResponseParameters, `size`
// zero bytes each.
template <typename W>
Future<> WriteResponses(W w, std::shared_ptr<const StreamingOutputCallRequest> req) {
  auto next = std::make_shared<int>(0);
  return DoWhile([w, req, next] {
    const int i = *next;
    if (i == req->response_parameters_size()) return MakeReadyFuture<bool>(false);
    ++*next;
    StreamingOutputCallResponse rsp;
    rsp.mutable_payload()->set_type(::grpc::testing::COMPRESSABLE);
    rsp.mutable_payload()->set_body(
        std::string(static_cast<size_t>(req->response_parameters(i).size()), '\0'));
    // (On a stream that compresses, a response not asked compressed goes plain.)
    stream::WriteOptions opts;
    opts.no_compression = !req->response_parameters(i).compressed().value();
    return After(req->response_parameters(i).interval_us())
        .Then([w, rsp = std::move(rsp), opts] { return w.Write(rsp, opts); })
        .Then([] {
          g_responses_written.fetch_add(1, std::memory_order_relaxed);
          return true;
        });
  });
}

// An EchoStatus asked for, as the stream's end.
Future<> StatusAsked(const StreamingOutputCallRequest& req) {
  if (!req.has_response_status() || req.response_status().code() == 0) {
    return MakeReadyFuture<>();
  }
  return MakeExceptionFuture<>(
      Status::AppError(req.response_status().code(), req.response_status().message()));
}

// The loops below are DoWhile: however long a client's stream, the stack stays flat.
// Each request's expect_compressed must match how it came (client_compressed_streaming), as
// grpc++'s interop server checks: INVALID_ARGUMENT otherwise.
Future<int> SumPayloads(stream::AsyncStreamReader<StreamingInputCallRequest> reader) {
  auto total = std::make_shared<int>(0);
  return DoWhile([reader, total] {
           return reader.Read().Then(
               [reader, total](std::optional<StreamingInputCallRequest>&& req) {
                 if (!req.has_value()) return MakeReadyFuture<bool>(false);
                 if (req->expect_compressed().value() != reader.LastReadCompressed()) {
                   return MakeExceptionFuture<bool>(Status::AppError(
                       3, req->expect_compressed().value()
                              ? "expected a compressed request, got it uncompressed"
                              : "expected an uncompressed request, got it compressed"));
                 }
                 *total += static_cast<int>(req->payload().body().size());
                 return MakeReadyFuture<bool>(true);
               });
         })
      .Then([total] { return *total; });
}

// FullDuplexCall: each request answered as it comes (its responses, or its status as the end).
// A response asked compressed compresses every response of the stream (gzip), when asked
// before the first one.
Future<> FullDuplex(ServerContextPtr ctx, Duplex rw) {
  return DoWhile([ctx, rw] {
    return rw.Read().Then([ctx, rw](std::optional<StreamingOutputCallRequest>&& req) {
      if (!req.has_value()) return MakeReadyFuture<bool>(false);
      if (req->has_response_status() && req->response_status().code() != 0) {
        return StatusAsked(*req).Then([] { return false; });
      }
      for (const auto& p : req->response_parameters()) {
        if (p.compressed().value()) grpc::SetResponseCompression(ctx.get(), "gzip");
      }
      auto shared = std::make_shared<const StreamingOutputCallRequest>(std::move(*req));
      return WriteResponses(rw, shared).Then([] { return true; });
    });
  });
}

// HalfDuplexCall: every request read first, then answered in order.
Future<> HalfDuplex(Duplex rw) {
  auto all = std::make_shared<std::vector<StreamingOutputCallRequest>>();
  auto next = std::make_shared<size_t>(0);
  return DoWhile([rw, all] {
           return rw.Read().Then([all](std::optional<StreamingOutputCallRequest>&& req) {
             if (!req.has_value()) return false;
             all->push_back(std::move(*req));
             return true;
           });
         })
      .Then([rw, all, next] {
        return DoWhile([rw, all, next] {
          if (*next == all->size()) return MakeReadyFuture<bool>(false);
          auto shared = std::make_shared<const StreamingOutputCallRequest>((*all)[(*next)++]);
          return WriteResponses(rw, shared).Then([] { return true; });
        });
      });
}

}  // namespace

uint64_t TestServiceImpl::responses_written() {
  return g_responses_written.load(std::memory_order_relaxed);
}

TestServiceImpl::TestServiceImpl() {
  const std::string prefix = "/grpc.testing.TestService/";
  AddAsyncServerStreamMethod<StreamingOutputCallRequest, StreamingOutputCallResponse>(
      prefix + "StreamingOutputCall",
      [](const ServerContextPtr& ctx, const StreamingOutputCallRequest& req, const Writer& w) {
        EchoMetadata(ctx);
        for (const auto& p : req.response_parameters()) {
          if (p.compressed().value()) grpc::SetResponseCompression(ctx.get(), "gzip");
        }
        auto shared = std::make_shared<const StreamingOutputCallRequest>(req);
        return WriteResponses(w, shared).Then([shared] { return StatusAsked(*shared); });
      });
  AddAsyncClientStreamMethod<StreamingInputCallRequest, StreamingInputCallResponse>(
      prefix + "StreamingInputCall",
      [](const ServerContextPtr&, const stream::AsyncStreamReader<StreamingInputCallRequest>& r) {
        return SumPayloads(r).Then([](int total) {
          StreamingInputCallResponse rsp;
          rsp.set_aggregated_payload_size(total);
          return rsp;
        });
      });
  AddAsyncBidiStreamMethod<StreamingOutputCallRequest, StreamingOutputCallResponse>(
      prefix + "FullDuplexCall", [](const ServerContextPtr& ctx, const Duplex& rw) {
        EchoMetadata(ctx);
        return FullDuplex(ctx, rw);
      });
  AddAsyncBidiStreamMethod<StreamingOutputCallRequest, StreamingOutputCallResponse>(
      prefix + "HalfDuplexCall",
      [](const ServerContextPtr&, const Duplex& rw) { return HalfDuplex(rw); });
}

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
  EchoMetadata(ctx);
  if (req->has_response_status() && req->response_status().code() != 0) {
    return Status::AppError(req->response_status().code(), req->response_status().message());
  }
  if (req->response_compressed().value()) grpc::SetResponseCompression(ctx.get(), "gzip");
  rsp->mutable_payload()->set_type(::grpc::testing::COMPRESSABLE);
  rsp->mutable_payload()->set_body(std::string(static_cast<size_t>(req->response_size()), '\0'));
  return kSuccStatus;
}

}  // namespace trpc::test::interop
