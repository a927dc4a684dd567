// grpcpp_interop_client --server=HOST:PORT --test_case=NAME|all [--skip=A,B] [--deadline_ms=N]
//   [--ca_file=F [--cert_file=F --key_file=F]] (TLS with grpc++'s SslCredentials):
// the unary and streaming cases of gRPC's interop-test-descriptions.md, run with Debian's gRPC
// C++ 1.51 against a grpc.testing.TestService server (our gRPC server, or grpcpp_interop_server).
// It is the reference peer for our gRPC server; README.md here lists the cases.
//
// Prints one line per case, "PASS <case>" or "FAIL <case>: <why>" ("SKIP <case>" for a case
// named by --skip), and exits 0 only if every case it ran passed (1 otherwise, 2 on bad usage).
// Every call has a deadline: --deadline_ms, 10000 by default.
//
// timeout_on_sleeping_server is our unary form of the case: it relies on the x-interop-sleep-ms
// and x-interop-query extensions that grpcpp_interop_server documents (and that a server under
// test must implement for this case).

#include <grpc/compression.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
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
// whether a response arrived compressed; gRPC's own interop client uses this function for the
// same check (server_compressed_unary).
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

constexpr int kRequestSize = 271828;
constexpr int kResponseSize = 314159;

// A string for a one-line message: control characters escaped, the rest (UTF-8 too) as is.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string Describe(const grpc::Status& st) {
  return "status " + std::to_string(st.error_code()) + " " + Quote(st.error_message());
}

// The value of the first `key` in a metadata map the server sent.
std::optional<std::string> Find(const std::multimap<grpc::string_ref, grpc::string_ref>& md,
                                std::string_view key) {
  auto it = md.find(grpc::string_ref(key.data(), key.size()));
  if (it == md.end()) return std::nullopt;
  return std::string(it->second.data(), it->second.size());
}

bool ResponseWasCompressed(grpc::ClientContext* ctx) {
  uint32_t flags = grpc_call_test_only_get_message_flags(ctx->c_call());
  return (flags & (kInternalCompress | kInternalWasCompressed)) != 0;
}

// response_size 314159, payload 271828 zero bytes (large_unary and the cases built on it).
SimpleRequest LargeRequest() {
  SimpleRequest req;
  req.set_response_type(grpc::testing::COMPRESSABLE);
  req.set_response_size(kResponseSize);
  req.mutable_payload()->set_type(grpc::testing::COMPRESSABLE);
  req.mutable_payload()->set_body(std::string(kRequestSize, '\0'));
  return req;
}

// "" if the reply's payload is `size` zero bytes, else what is wrong.
std::string CheckPayload(const SimpleResponse& rsp, size_t size) {
  const std::string& body = rsp.payload().body();
  if (body.size() != size) {
    return "response payload is " + std::to_string(body.size()) + " bytes, expected " +
           std::to_string(size);
  }
  if (std::any_of(body.begin(), body.end(), [](char c) { return c != '\0'; })) {
    return "response payload is not all zeros";
  }
  if (rsp.payload().type() != grpc::testing::COMPRESSABLE) {
    return "response payload type is " + std::to_string(rsp.payload().type());
  }
  return "";
}

class Interop {
 public:
  Interop(const std::string& server, std::chrono::milliseconds deadline,
          std::shared_ptr<grpc::ChannelCredentials> creds)
      : channel_(grpc::CreateChannel(server, std::move(creds))),
        stub_(TestService::NewStub(channel_)),
        unimplemented_stub_(grpc::testing::UnimplementedService::NewStub(channel_)),
        deadline_(deadline) {}

  // Each case returns "" when it passes, else why it failed.

  std::string EmptyUnary() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    Empty req;
    Empty rsp;
    grpc::Status st = stub_->EmptyCall(&ctx, req, &rsp);
    if (!st.ok()) return "EmptyCall: " + Describe(st);
    if (rsp.ByteSizeLong() != 0) return "EmptyCall's reply is not empty";
    return "";
  }

  std::string LargeUnary() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    SimpleResponse rsp;
    grpc::Status st = stub_->UnaryCall(&ctx, LargeRequest(), &rsp);
    if (!st.ok()) return "UnaryCall: " + Describe(st);
    return CheckPayload(rsp, kResponseSize);
  }

  std::string ClientCompressedUnary() {
    {
      // The probe: expect_compressed, sent uncompressed, must be refused.
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      SimpleRequest req = LargeRequest();
      req.mutable_expect_compressed()->set_value(true);
      SimpleResponse rsp;
      grpc::Status st = stub_->UnaryCall(&ctx, req, &rsp);
      if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
        return "probe (expect_compressed, sent uncompressed): " + Describe(st) +
               ", expected INVALID_ARGUMENT (3)";
      }
    }
    for (bool compressed : {true, false}) {
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      if (compressed) ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
      SimpleRequest req = LargeRequest();
      req.mutable_expect_compressed()->set_value(compressed);
      SimpleResponse rsp;
      grpc::Status st = stub_->UnaryCall(&ctx, req, &rsp);
      std::string what = compressed ? "gzip request with expect_compressed"
                                    : "uncompressed request without expect_compressed";
      if (!st.ok()) return what + ": " + Describe(st);
      if (std::string bad = CheckPayload(rsp, kResponseSize); !bad.empty()) {
        return what + ": " + bad;
      }
    }
    return "";
  }

  std::string ServerCompressedUnary() {
    for (bool compressed : {true, false}) {
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      SimpleRequest req = LargeRequest();
      req.mutable_response_compressed()->set_value(compressed);
      SimpleResponse rsp;
      grpc::Status st = stub_->UnaryCall(&ctx, req, &rsp);
      std::string what = "response_compressed=" + std::string(compressed ? "true" : "false");
      if (!st.ok()) return what + ": " + Describe(st);
      if (std::string bad = CheckPayload(rsp, kResponseSize); !bad.empty()) {
        return what + ": " + bad;
      }
      if (ResponseWasCompressed(&ctx) != compressed) {
        return what + ": the response was " + (compressed ? "not " : "") + "compressed";
      }
    }
    return "";
  }

  std::string StatusCodeAndMessage() {
    if (std::string bad = EchoStatus(2, "test status message"); !bad.empty()) return bad;
    // The streaming half: the status asked for in a FullDuplexCall request ends the stream.
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto stream = stub_->FullDuplexCall(&ctx);
    StreamingOutputCallRequest req;
    req.mutable_response_status()->set_code(2);
    req.mutable_response_status()->set_message("test status message");
    if (!stream->Write(req)) return "FullDuplexCall: the first write failed";
    stream->WritesDone();
    StreamingOutputCallResponse rsp;
    while (stream->Read(&rsp)) {
    }
    grpc::Status st = stream->Finish();
    if (st.error_code() != 2 || st.error_message() != "test status message") {
      return "FullDuplexCall: " + Describe(st) + R"(, expected status 2 "test status message")";
    }
    return "";
  }

  // ---- The streaming cases ----

  std::string ClientStreaming() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    StreamingInputCallResponse rsp;
    auto stream = stub_->StreamingInputCall(&ctx, &rsp);
    for (int size : {27182, 8, 1828, 45904}) {
      StreamingInputCallRequest req;
      req.mutable_payload()->set_body(std::string(static_cast<size_t>(size), '\0'));
      if (!stream->Write(req)) return "StreamingInputCall: a write failed";
    }
    stream->WritesDone();
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "StreamingInputCall: " + Describe(st);
    if (rsp.aggregated_payload_size() != 74922) {
      return "aggregated_payload_size " + std::to_string(rsp.aggregated_payload_size()) +
             ", expected 74922";
    }
    return "";
  }

  // A probe first: a message expecting compression, sent plain, must be refused; then one gzip
  // message expecting it and one plain message (no_compression) that does not.
  std::string ClientCompressedStreaming() {
    {
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      StreamingInputCallResponse rsp;
      auto stream = stub_->StreamingInputCall(&ctx, &rsp);
      StreamingInputCallRequest req;
      req.mutable_expect_compressed()->set_value(true);
      req.mutable_payload()->set_body(std::string(27182, '\0'));
      // (The write may fail: the server may have refused the stream already.)
      stream->Write(req, grpc::WriteOptions().set_no_compression());
      stream->WritesDone();
      grpc::Status st = stream->Finish();
      if (st.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
        return "probe (expect_compressed, sent uncompressed): " + Describe(st) +
               ", expected INVALID_ARGUMENT (3)";
      }
    }
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
    StreamingInputCallResponse rsp;
    auto stream = stub_->StreamingInputCall(&ctx, &rsp);
    StreamingInputCallRequest req;
    req.mutable_expect_compressed()->set_value(true);
    req.mutable_payload()->set_body(std::string(27182, '\0'));
    if (!stream->Write(req)) return "the compressed write failed";
    req.mutable_expect_compressed()->set_value(false);
    req.mutable_payload()->set_body(std::string(45904, '\0'));
    if (!stream->Write(req, grpc::WriteOptions().set_no_compression())) {
      return "the uncompressed write failed";
    }
    stream->WritesDone();
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "StreamingInputCall: " + Describe(st);
    if (rsp.aggregated_payload_size() != 73086) {
      return "aggregated_payload_size " + std::to_string(rsp.aggregated_payload_size()) +
             ", expected 73086";
    }
    return "";
  }

  std::string ServerStreaming() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    StreamingOutputCallRequest req;
    const int sizes[] = {31415, 9, 2653, 58979};
    for (int size : sizes) req.add_response_parameters()->set_size(size);
    auto stream = stub_->StreamingOutputCall(&ctx, req);
    StreamingOutputCallResponse rsp;
    size_t n = 0;
    while (stream->Read(&rsp)) {
      if (n >= 4) return "more than 4 responses";
      if (rsp.payload().body().size() != static_cast<size_t>(sizes[n])) {
        return "response " + std::to_string(n) + " is " +
               std::to_string(rsp.payload().body().size()) + " bytes, expected " +
               std::to_string(sizes[n]);
      }
      ++n;
    }
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "StreamingOutputCall: " + Describe(st);
    if (n != 4) return std::to_string(n) + " responses, expected 4";
    return "";
  }

  std::string PingPong() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto stream = stub_->FullDuplexCall(&ctx);
    const int rsp_sizes[] = {31415, 9, 2653, 58979};
    const int req_sizes[] = {27182, 8, 1828, 45904};
    for (int i = 0; i < 4; ++i) {
      if (std::string bad = Ping(stream.get(), req_sizes[i], rsp_sizes[i]); !bad.empty()) {
        return "round " + std::to_string(i) + ": " + bad;
      }
    }
    stream->WritesDone();
    StreamingOutputCallResponse rsp;
    if (stream->Read(&rsp)) return "a response after the last round";
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "FullDuplexCall: " + Describe(st);
    return "";
  }

  std::string EmptyStream() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto stream = stub_->FullDuplexCall(&ctx);
    stream->WritesDone();
    StreamingOutputCallResponse rsp;
    if (stream->Read(&rsp)) return "a response to an empty stream";
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "FullDuplexCall: " + Describe(st);
    return "";
  }

  std::string CancelAfterBegin() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    StreamingInputCallResponse rsp;
    auto stream = stub_->StreamingInputCall(&ctx, &rsp);
    ctx.TryCancel();
    grpc::Status st = stream->Finish();
    if (st.error_code() != grpc::StatusCode::CANCELLED) {
      return "StreamingInputCall: " + Describe(st) + ", expected CANCELLED (1)";
    }
    return "";
  }

  std::string CancelAfterFirstResponse() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto stream = stub_->FullDuplexCall(&ctx);
    if (std::string bad = Ping(stream.get(), 27182, 31415); !bad.empty()) return bad;
    ctx.TryCancel();
    grpc::Status st = stream->Finish();
    if (st.error_code() != grpc::StatusCode::CANCELLED) {
      return "FullDuplexCall: " + Describe(st) + ", expected CANCELLED (1)";
    }
    return "";
  }

  std::string ServerCompressedStreaming() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    StreamingOutputCallRequest req;
    auto* first = req.add_response_parameters();
    first->mutable_compressed()->set_value(true);
    first->set_size(31415);
    auto* second = req.add_response_parameters();
    second->mutable_compressed()->set_value(false);
    second->set_size(92653);
    auto stream = stub_->StreamingOutputCall(&ctx, req);
    StreamingOutputCallResponse rsp;
    if (!stream->Read(&rsp)) return "no first response";
    if (rsp.payload().body().size() != 31415) return "the first response's size";
    if (!ResponseWasCompressed(&ctx)) return "the first response was not compressed";
    if (!stream->Read(&rsp)) return "no second response";
    if (rsp.payload().body().size() != 92653) return "the second response's size";
    if (ResponseWasCompressed(&ctx)) return "the second response was compressed";
    if (stream->Read(&rsp)) return "a third response";
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "StreamingOutputCall: " + Describe(st);
    return "";
  }

  // gRPC's timeout_on_sleeping_server: a FullDuplexCall with a 1 ms deadline whose server does
  // not answer in time.
  std::string TimeoutOnSleepingServerStreaming() {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
    auto stream = stub_->FullDuplexCall(&ctx);
    StreamingOutputCallRequest req;
    req.mutable_payload()->set_body(std::string(27182, '\0'));
    stream->Write(req);  // (may fail: the deadline may have passed already)
    grpc::Status st = stream->Finish();
    if (st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
      return "FullDuplexCall: " + Describe(st) + ", expected DEADLINE_EXCEEDED (4)";
    }
    return "";
  }

  std::string SpecialStatusMessage() {
    return EchoStatus(2,
                      "\t\ntest with whitespace\r\nand Unicode BMP \u263A and non-BMP "
                      "\U0001F608\t\n");
  }

  std::string CustomMetadata() {
    const std::string initial_key = "x-grpc-test-echo-initial";
    const std::string initial_value = "test_initial_metadata_value";
    const std::string trailing_key = "x-grpc-test-echo-trailing-bin";
    const std::string trailing_value = "\xab\xab\xab";
    auto check = [&](grpc::ClientContext& ctx, const std::string& what) -> std::string {
      std::optional<std::string> initial = Find(ctx.GetServerInitialMetadata(), initial_key);
      if (initial != initial_value) {
        return what + ": " + initial_key + " in the initial metadata is " +
               (initial ? Quote(*initial) : "missing") + ", expected " + Quote(initial_value);
      }
      std::optional<std::string> trailing = Find(ctx.GetServerTrailingMetadata(), trailing_key);
      if (trailing != trailing_value) {
        return what + ": " + trailing_key + " in the trailing metadata is " +
               (trailing ? Quote(*trailing) : "missing") + ", expected " + Quote(trailing_value);
      }
      return "";
    };
    {
      grpc::ClientContext ctx;
      SetDeadline(&ctx);
      ctx.AddMetadata(initial_key, initial_value);
      ctx.AddMetadata(trailing_key, trailing_value);
      SimpleResponse rsp;
      grpc::Status st = stub_->UnaryCall(&ctx, LargeRequest(), &rsp);
      if (!st.ok()) return "UnaryCall: " + Describe(st);
      if (std::string bad = CheckPayload(rsp, kResponseSize); !bad.empty()) return bad;
      if (std::string bad = check(ctx, "UnaryCall"); !bad.empty()) return bad;
    }
    // The streaming half: a FullDuplexCall of one round.
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ctx.AddMetadata(initial_key, initial_value);
    ctx.AddMetadata(trailing_key, trailing_value);
    auto stream = stub_->FullDuplexCall(&ctx);
    if (std::string bad = Ping(stream.get(), 271828, 314159); !bad.empty()) {
      return "FullDuplexCall: " + bad;
    }
    stream->WritesDone();
    grpc::Status st = stream->Finish();
    if (!st.ok()) return "FullDuplexCall: " + Describe(st);
    return check(ctx, "FullDuplexCall");
  }

  std::string UnimplementedMethod() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    Empty req;
    Empty rsp;
    grpc::Status st = stub_->UnimplementedCall(&ctx, req, &rsp);
    if (st.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
      return "grpc.testing.TestService/UnimplementedCall: " + Describe(st) +
             ", expected UNIMPLEMENTED (12)";
    }
    return "";
  }

  std::string UnimplementedService() {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    Empty req;
    Empty rsp;
    grpc::Status st = unimplemented_stub_->UnimplementedCall(&ctx, req, &rsp);
    if (st.error_code() != grpc::StatusCode::UNIMPLEMENTED) {
      return "grpc.testing.UnimplementedService/UnimplementedCall: " + Describe(st) +
             ", expected UNIMPLEMENTED (12)";
    }
    return "";
  }

  // A UnaryCall told to sleep 5 s (x-interop-sleep-ms) under a 100 ms deadline ends with
  // DEADLINE_EXCEEDED within 2 s, and then the server reports (x-interop-query) one more call
  // seen cancelled than before it, within 3 s.
  std::string TimeoutOnSleepingServer() {
    int64_t before = 0;
    if (std::string bad = QueryCancelled(&before); !bad.empty()) return bad;
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
      ctx.AddMetadata("x-interop-sleep-ms", "5000");
      SimpleRequest req;
      SimpleResponse rsp;
      auto start = std::chrono::steady_clock::now();
      grpc::Status st = stub_->UnaryCall(&ctx, req, &rsp);
      auto took = std::chrono::steady_clock::now() - start;
      if (st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
        return "UnaryCall (x-interop-sleep-ms: 5000, 100 ms deadline): " + Describe(st) +
               ", expected DEADLINE_EXCEEDED (4)";
      }
      if (took > std::chrono::seconds(2)) {
        return "DEADLINE_EXCEEDED came after " +
               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()) +
               " ms of a 100 ms deadline";
      }
    }
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    int64_t now_cancelled = before;
    for (;;) {
      if (std::string bad = QueryCancelled(&now_cancelled); !bad.empty()) return bad;
      if (now_cancelled > before) return "";
      if (std::chrono::steady_clock::now() >= give_up) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return "the server did not notice the cancellation (x-interop-cancelled stayed at " +
           std::to_string(now_cancelled) + " for 3 s)";
  }

 private:
  void SetDeadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(std::chrono::system_clock::now() + deadline_);
  }

  std::string EchoStatus(int code, const std::string& message) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    SimpleRequest req;
    req.mutable_response_status()->set_code(code);
    req.mutable_response_status()->set_message(message);
    SimpleResponse rsp;
    grpc::Status st = stub_->UnaryCall(&ctx, req, &rsp);
    if (st.error_code() != code || st.error_message() != message) {
      return "UnaryCall: " + Describe(st) + ", expected status " + std::to_string(code) + " " +
             Quote(message);
    }
    return "";
  }

  // One round of ping_pong: a request of `req_size` bytes asking for one response of
  // `rsp_size`, and that response.
  template <typename Stream>
  std::string Ping(Stream* stream, int req_size, int rsp_size) {
    StreamingOutputCallRequest req;
    req.add_response_parameters()->set_size(rsp_size);
    req.mutable_payload()->set_body(std::string(static_cast<size_t>(req_size), '\0'));
    if (!stream->Write(req)) return "the write failed";
    StreamingOutputCallResponse rsp;
    if (!stream->Read(&rsp)) return "no response";
    if (rsp.payload().body().size() != static_cast<size_t>(rsp_size)) {
      return "the response is " + std::to_string(rsp.payload().body().size()) +
             " bytes, expected " + std::to_string(rsp_size);
    }
    return "";
  }

  // EmptyCall with x-interop-query: cancelled; its trailing x-interop-cancelled in `*count` (0
  // if the server sent none).
  std::string QueryCancelled(int64_t* count) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    ctx.AddMetadata("x-interop-query", "cancelled");
    Empty req;
    Empty rsp;
    grpc::Status st = stub_->EmptyCall(&ctx, req, &rsp);
    if (!st.ok()) return "EmptyCall (x-interop-query: cancelled): " + Describe(st);
    std::optional<std::string> v = Find(ctx.GetServerTrailingMetadata(), "x-interop-cancelled");
    *count = 0;
    if (v) {
      auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), *count);
      if (ec != std::errc() || end != v->data() + v->size()) {
        return "x-interop-cancelled is not a number: " + Quote(*v);
      }
    }
    return "";
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<TestService::Stub> stub_;
  std::unique_ptr<grpc::testing::UnimplementedService::Stub> unimplemented_stub_;
  std::chrono::milliseconds deadline_;
};

struct Case {
  const char* name;
  std::string (Interop::*run)();
};

// In the order `all` runs them.
constexpr Case kCases[] = {
    {"empty_unary", &Interop::EmptyUnary},
    {"large_unary", &Interop::LargeUnary},
    {"client_compressed_unary", &Interop::ClientCompressedUnary},
    {"server_compressed_unary", &Interop::ServerCompressedUnary},
    {"status_code_and_message", &Interop::StatusCodeAndMessage},
    {"special_status_message", &Interop::SpecialStatusMessage},
    {"custom_metadata", &Interop::CustomMetadata},
    {"unimplemented_method", &Interop::UnimplementedMethod},
    {"unimplemented_service", &Interop::UnimplementedService},
    {"timeout_on_sleeping_server", &Interop::TimeoutOnSleepingServer},
    {"client_streaming", &Interop::ClientStreaming},
    {"client_compressed_streaming", &Interop::ClientCompressedStreaming},
    {"server_streaming", &Interop::ServerStreaming},
    {"ping_pong", &Interop::PingPong},
    {"empty_stream", &Interop::EmptyStream},
    {"cancel_after_begin", &Interop::CancelAfterBegin},
    {"cancel_after_first_response", &Interop::CancelAfterFirstResponse},
    {"timeout_on_sleeping_server_streaming", &Interop::TimeoutOnSleepingServerStreaming},
    {"server_compressed_streaming", &Interop::ServerCompressedStreaming},
};

const Case* FindCase(std::string_view name) {
  for (const Case& c : kCases) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

int Usage(const char* argv0, const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "%s: %s\n", argv0, why.c_str());
  std::fprintf(stderr,
               "usage: %s --server=HOST:PORT --test_case=NAME|all [--skip=NAME,...] "
               "[--ca_file=F [--cert_file=F --key_file=F]] "
               "[--deadline_ms=N]\ncases:",
               argv0);
  for (const Case& c : kCases) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "\n");
  return 2;
}

// A whole file's bytes ("" when it cannot be read: the handshake then fails, and says so).
std::string ReadFile(const std::string& path) {
  std::string out;
  trpc::test::interop::ReadWholeFile(path, &out);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string server;
  // TLS (grpc++'s SslCredentials): --ca_file turns it on; --cert_file and --key_file present
  // a client certificate.
  std::string ca_file, cert_file, key_file;
  std::string test_case;
  std::string skip;
  int64_t deadline_ms = 10'000;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    std::string_view name = a.substr(0, a.find('='));
    std::string value;
    if (a.find('=') != std::string_view::npos) {
      value = a.substr(a.find('=') + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage(argv[0], "no value for " + std::string(a));
    }
    if (name == "--server") {
      server = value;
    } else if (name == "--test_case") {
      test_case = value;
    } else if (name == "--ca_file") {
      ca_file = value;
    } else if (name == "--cert_file") {
      cert_file = value;
    } else if (name == "--key_file") {
      key_file = value;
    } else if (name == "--skip") {
      skip = value;
    } else if (name == "--deadline_ms") {
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), deadline_ms);
      if (ec != std::errc() || end != value.data() + value.size() || deadline_ms <= 0) {
        return Usage(argv[0], "bad --deadline_ms " + value);
      }
    } else {
      return Usage(argv[0], "unknown option " + std::string(a));
    }
  }
  if (server.empty() || test_case.empty()) return Usage(argv[0], "");

  std::vector<const Case*> run;
  if (test_case == "all") {
    for (const Case& c : kCases) run.push_back(&c);
  } else if (const Case* c = FindCase(test_case)) {
    run.push_back(c);
  } else {
    return Usage(argv[0], "unknown test case " + test_case);
  }
  std::vector<const Case*> skipped;
  for (size_t at = 0; at < skip.size();) {
    size_t comma = std::min(skip.find(',', at), skip.size());
    std::string name = skip.substr(at, comma - at);
    at = comma + 1;
    if (name.empty()) continue;
    const Case* c = FindCase(name);
    if (c == nullptr) return Usage(argv[0], "unknown test case in --skip: " + name);
    skipped.push_back(c);
  }

  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!ca_file.empty()) {
    grpc::SslCredentialsOptions o;
    o.pem_root_certs = ReadFile(ca_file);
    if (!cert_file.empty()) {
      o.pem_cert_chain = ReadFile(cert_file);
      o.pem_private_key = ReadFile(key_file);
    }
    creds = grpc::SslCredentials(o);
  }
  Interop interop(server, std::chrono::milliseconds(deadline_ms), creds);
  bool all_passed = true;
  for (const Case* c : run) {
    if (std::find(skipped.begin(), skipped.end(), c) != skipped.end()) {
      std::printf("SKIP %s\n", c->name);
    } else if (std::string why = (interop.*c->run)(); why.empty()) {
      std::printf("PASS %s\n", c->name);
    } else {
      std::printf("FAIL %s: %s\n", c->name, why.c_str());
      all_passed = false;
    }
    std::fflush(stdout);
  }
  return all_passed ? 0 : 1;
}
