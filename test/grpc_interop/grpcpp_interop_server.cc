// grpcpp_interop_server [--port N] [--tls_cert F --tls_key F [--tls_client_ca F]] (TLS with
// grpc++'s SslServerCredentials; a client CA makes it require client certificates):
// grpc.testing.TestService (grpc-proto's test.proto) served by
// Debian's gRPC C++ 1.51, the reference peer for our gRPC client. It implements the unary server
// features of gRPC's interop-test-descriptions.md: EmptyCall, UnaryCall (payload of
// response_size zeros, CompressedResponse, CompressedRequest, Echo Status, Echo Metadata) and
// UnimplementedCall (UNIMPLEMENTED); the streaming methods stay unimplemented.
//
// Our extensions (README.md here), read from the request metadata:
//   x-interop-sleep-ms: <ms>      (EmptyCall, UnaryCall) the handler first sleeps that long, in
//                                 5 ms steps, checking ServerContext::IsCancelled(); when it sees
//                                 the call cancelled (the client's deadline passed or it reset the
//                                 stream) it counts the call as cancelled and returns CANCELLED.
//   x-interop-query: cancelled    (EmptyCall) the reply carries the trailing metadata
//                                 x-interop-cancelled: <calls seen cancelled so far>.
//
// Listens on 127.0.0.1:N (0, the default, picks a free port), prints exactly one line
// "grpcpp_interop_server ready on 127.0.0.1:PORT" once ready, and exits 0 on SIGTERM or SIGINT.

#include <grpc/compression.h>
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "grpc/testing/test.grpc.pb.h"
#include "test/grpc_interop/read_file.h"

// Exported by libgrpc but declared only in its private src/core/lib/surface/call_test_only.h:
// the flags of the last message the call received. gRPC C++ 1.51 has no public way to tell
// whether a request arrived compressed (the decompression happens below the C++ API and
// grpc-encoding is not among the metadata the application sees); gRPC's own interop server uses
// this function for the same check.
uint32_t grpc_call_test_only_get_message_flags(grpc_call* call);

namespace {

using grpc::testing::Empty;
using grpc::testing::SimpleRequest;
using grpc::testing::SimpleResponse;
using grpc::testing::StreamingInputCallRequest;
using grpc::testing::StreamingInputCallResponse;
using grpc::testing::StreamingOutputCallRequest;
using grpc::testing::StreamingOutputCallResponse;
using grpc::testing::TestService;

// Bits of those flags (src/core/lib/transport/transport.h): the message is still compressed
// (decompression off), or the message was compressed and gRPC has decompressed it.
constexpr uint32_t kInternalCompress = 0x80000000u;
constexpr uint32_t kInternalWasCompressed = 0x40000000u;

constexpr std::string_view kEchoInitial = "x-grpc-test-echo-initial";
constexpr std::string_view kEchoTrailingBin = "x-grpc-test-echo-trailing-bin";
constexpr std::string_view kSleepMs = "x-interop-sleep-ms";
constexpr std::string_view kQuery = "x-interop-query";
constexpr std::string_view kCancelled = "x-interop-cancelled";

// The value of the first `key` the client sent.
std::optional<std::string> Metadata(const grpc::ServerContext* ctx, std::string_view key) {
  auto it = ctx->client_metadata().find(grpc::string_ref(key.data(), key.size()));
  if (it == ctx->client_metadata().end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

class TestServiceImpl final : public TestService::Service {
 public:
  grpc::Status EmptyCall(grpc::ServerContext* ctx, const Empty* req, Empty* rsp) override {
    grpc::Status slept = MaybeSleep(ctx);
    if (!slept.ok()) return slept;
    if (Metadata(ctx, kQuery) == "cancelled") {
      ctx->AddTrailingMetadata(std::string(kCancelled), std::to_string(cancelled_.load()));
    }
    return grpc::Status::OK;
  }

  grpc::Status UnaryCall(grpc::ServerContext* ctx, const SimpleRequest* req,
                         SimpleResponse* rsp) override {
    grpc::Status slept = MaybeSleep(ctx);
    if (!slept.ok()) return slept;
    // Echoed before anything can fail, so error replies carry the metadata too.
    if (auto v = Metadata(ctx, kEchoInitial))
      ctx->AddInitialMetadata(std::string(kEchoInitial), *v);
    if (auto v = Metadata(ctx, kEchoTrailingBin)) {
      ctx->AddTrailingMetadata(std::string(kEchoTrailingBin), *v);
    }
    if (req->response_type() != grpc::testing::COMPRESSABLE) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "unsupported response_type");
    }
    if (req->response_compressed().value()) ctx->set_compression_algorithm(GRPC_COMPRESS_GZIP);
    if (req->expect_compressed().value()) {
      uint32_t flags = grpc_call_test_only_get_message_flags(ctx->c_call());
      if ((flags & (kInternalCompress | kInternalWasCompressed)) == 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "expect_compressed is set but the request was not compressed");
      }
    }
    if (req->has_response_status()) {
      return grpc::Status(static_cast<grpc::StatusCode>(req->response_status().code()),
                          req->response_status().message());
    }
    if (req->response_size() < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "negative response_size");
    }
    // fill_username and fill_oauth_scope are ignored: there is no authentication here.
    rsp->mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
    rsp->mutable_payload()->set_body(std::string(req->response_size(), '\0'));
    return grpc::Status::OK;
  }

  // The streaming methods (interop-test-descriptions.md's server side).
  grpc::Status StreamingOutputCall(
      grpc::ServerContext* ctx, const StreamingOutputCallRequest* req,
      grpc::ServerWriter<StreamingOutputCallResponse>* writer) override {
    EchoMetadata(ctx);
    if (!Respond(ctx, *req, writer)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
    return StatusAsked(*req);
  }

  grpc::Status StreamingInputCall(grpc::ServerContext* ctx,
                                  grpc::ServerReader<StreamingInputCallRequest>* reader,
                                  StreamingInputCallResponse* rsp) override {
    StreamingInputCallRequest req;
    int total = 0;
    while (reader->Read(&req)) {
      // client_compressed_streaming: each message's flag must match its expect_compressed.
      uint32_t flags = grpc_call_test_only_get_message_flags(ctx->c_call());
      bool compressed = (flags & (kInternalCompress | kInternalWasCompressed)) != 0;
      if (compressed != req.expect_compressed().value()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "a request's expect_compressed does not match how it came");
      }
      total += static_cast<int>(req.payload().body().size());
    }
    rsp->set_aggregated_payload_size(total);
    return grpc::Status::OK;
  }

  grpc::Status FullDuplexCall(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream)
      override {
    EchoMetadata(ctx);
    StreamingOutputCallRequest req;
    while (stream->Read(&req)) {
      if (req.has_response_status() && req.response_status().code() != 0) {
        return StatusAsked(req);
      }
      if (!Respond(ctx, req, stream)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
    }
    return grpc::Status::OK;
  }

  grpc::Status HalfDuplexCall(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<StreamingOutputCallResponse, StreamingOutputCallRequest>* stream)
      override {
    std::vector<StreamingOutputCallRequest> all;
    StreamingOutputCallRequest req;
    while (stream->Read(&req)) all.push_back(req);
    for (const auto& r : all) {
      if (!Respond(ctx, r, stream)) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
    }
    return grpc::Status::OK;
  }

  // UnimplementedCall is left to the generated base class, which returns UNIMPLEMENTED.

  // x-interop-sleep-ms (the top of the file).
  grpc::Status MaybeSleep(grpc::ServerContext* ctx) {
    std::optional<std::string> ms_text = Metadata(ctx, kSleepMs);
    if (!ms_text) return grpc::Status::OK;
    int64_t ms = -1;
    auto [end, ec] = std::from_chars(ms_text->data(), ms_text->data() + ms_text->size(), ms);
    if (ec != std::errc() || end != ms_text->data() + ms_text->size() || ms < 0) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad x-interop-sleep-ms");
    }
    auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    for (;;) {
      if (ctx->IsCancelled()) {
        cancelled_.fetch_add(1);
        return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled while sleeping");
      }
      auto now = std::chrono::steady_clock::now();
      if (now >= until) return grpc::Status::OK;
      std::this_thread::sleep_for(
          std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(5)));
    }
  }

 private:
  // custom_metadata's echo: the initial key back in the headers, the -bin one in the trailers.
  static void EchoMetadata(grpc::ServerContext* ctx) {
    if (auto v = Metadata(ctx, kEchoInitial)) {
      ctx->AddInitialMetadata(std::string(kEchoInitial), *v);
    }
    if (auto v = Metadata(ctx, kEchoTrailingBin)) {
      ctx->AddTrailingMetadata(std::string(kEchoTrailingBin), *v);
    }
  }

  // The responses `req` asks for: one per ResponseParameters, `size` zero bytes each, after
  // `interval_us`; false if a write failed (the stream is gone).
  template <typename W>
  static bool Respond(grpc::ServerContext* ctx, const StreamingOutputCallRequest& req, W* w) {
    for (const auto& p : req.response_parameters()) {
      if (p.interval_us() > 0)
        std::this_thread::sleep_for(std::chrono::microseconds(p.interval_us()));
      StreamingOutputCallResponse rsp;
      rsp.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
      rsp.mutable_payload()->set_body(std::string(static_cast<size_t>(p.size()), '\0'));
      grpc::WriteOptions opts;
      if (!p.compressed().value()) opts.set_no_compression();
      if (p.compressed().value()) ctx->set_compression_algorithm(GRPC_COMPRESS_GZIP);
      if (!w->Write(rsp, opts)) return false;
    }
    return true;
  }

  static grpc::Status StatusAsked(const StreamingOutputCallRequest& req) {
    if (!req.has_response_status()) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(req.response_status().code()),
                        req.response_status().message());
  }

  std::atomic<int64_t> cancelled_{0};
};

// A whole file's bytes; "" (and a message) when it cannot be read.
std::string ReadFile(const char* argv0, const std::string& path) {
  std::string out;
  if (!trpc::test::interop::ReadWholeFile(path, &out)) {
    std::fprintf(stderr, "%s: cannot read '%s'\n", argv0, path.c_str());
  }
  return out;
}

}  // namespace

// test.proto defines only services, so nothing refers to its .pb.o and the linker leaves it out
// of this program: its descriptors must be kept for reflection to describe TestService.
[[gnu::used]] static const void* const keep_test_proto =
    &descriptor_table_grpc_2ftesting_2ftest_2eproto;

int main(int argc, char** argv) {
  int port = 0;
  // TLS (grpc++'s SslServerCredentials): --tls_cert and --tls_key serve TLS; --tls_client_ca
  // also requires a client certificate that chains to it.
  std::string tls_cert, tls_key, tls_client_ca;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view name = a.substr(0, a.find('='));
    std::string_view value;
    if (a.find('=') != std::string_view::npos) {
      value = a.substr(a.find('=') + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    }
    if (name == "--tls_cert") {
      tls_cert = value;
      continue;
    }
    if (name == "--tls_key") {
      tls_key = value;
      continue;
    }
    if (name == "--tls_client_ca") {
      tls_client_ca = value;
      continue;
    }
    if (name != "--port" || value.empty()) {
      std::fprintf(stderr,
                   "usage: %s [--port N] [--tls_cert F --tls_key F [--tls_client_ca F]]   (port "
                   "0, the default, picks a free port)\n",
                   argv[0]);
      return 2;
    }
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
    if (ec != std::errc() || end != value.data() + value.size() || port < 0 || port > 65535) {
      std::fprintf(stderr, "%s: bad port '%s'\n", argv[0], std::string(value).c_str());
      return 2;
    }
  }
  // Blocked before gRPC starts its threads, so they inherit the mask and only sigwait() below
  // receives the stop signals.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  // (After the mask: making credentials starts gRPC, and its threads.)
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!tls_cert.empty()) {
    grpc::SslServerCredentialsOptions o(
        tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    o.pem_key_cert_pairs.push_back({ReadFile(argv[0], tls_key), ReadFile(argv[0], tls_cert)});
    if (!tls_client_ca.empty()) o.pem_root_certs = ReadFile(argv[0], tls_client_ca);
    creds = grpc::SslServerCredentials(o);
  }

  TestServiceImpl service;
  int bound_port = 0;
  // Server reflection, as a grpc++ team would serve it (1.51: grpc.reflection.v1alpha only):
  // trpc-cli finds the services through it.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), creds, &bound_port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::fprintf(stderr, "%s: cannot listen on 127.0.0.1:%d\n", argv[0], port);
    return 1;
  }
  std::printf("grpcpp_interop_server ready on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  // Calls still running after 1 s (a long x-interop-sleep-ms) are cancelled; the sleeping
  // handlers see it within 5 ms.
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  return 0;
}
