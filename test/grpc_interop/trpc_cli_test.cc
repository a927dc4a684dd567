// trpc-cli (docs/cli.md) against real servers, in the thread model of TRPC_GRPC_INTEROP_MODEL
// (merge, or fiber for the _fiber run): our grpc.testing.TestService over gRPC, trpc and gRPC
// over TLS, with reflection; grpc++'s interop server through its v1alpha reflection, a
// descriptor set and .proto files; and every error a script must be able to tell apart by the
// exit code.

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>

#include "fmt/format.h"
#include "test/common/child_server.h"
#include "test/common/peer.h"
#include "test/common/shell.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "test/common/tls_certs.h"
#include "test/common/wait_for.h"
#include "test/grpc_interop/trpc_interop_service.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/grpc/grpc_server.h"
#include "trpc/server/http/http_service.h"
#include "trpc/server/reflection/reflection.h"
#include "trpc/server/server.h"

namespace trpc::test::interop {
namespace {

using trpc::testing::RunShell;

std::string Model() {
  const char* m = std::getenv("TRPC_GRPC_INTEROP_MODEL");
  return m != nullptr && std::string(m) == "fiber" ? "fiber" : "merge";
}

class TrpcCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    certs_ = new trpc::testing::TestCerts;
    std::string yaml = trpc::testing::ThreadModelYaml(Model() == "fiber", {{"cli", 2}}) +
                       fmt::format(R"(server:
  service:
    - name: cli_grpc
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      reflection: true
    - name: cli_trpc
      protocol: trpc
      ip: 127.0.0.1
      port: 0
      reflection: true
    - name: cli_tls
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      reflection: true
      ssl:
        enable: true
        cert_path: {}
        private_key_path: {}
    - name: cli_plain
      protocol: grpc
      ip: 127.0.0.1
      port: 0
      reflection: false
    - name: cli_http
      protocol: http
      ip: 127.0.0.1
      port: 0
)",
                                   certs_->Pem("server"), certs_->Key("server"));
    Config config;
    ASSERT_TRUE(trpc::testing::StartRuntime(yaml, "cli.yaml", &config));
    server_ = new Server(config.server);
    auto impl = std::make_shared<TestServiceImpl>();
    auto plain = std::make_shared<TestServiceImpl>();  // a Service of its own: no reflection
    for (const char* name : {"cli_grpc", "cli_trpc", "cli_tls"}) {
      ASSERT_TRUE(server_->RegisterService(name, impl));
    }
    ASSERT_TRUE(server_->RegisterService("cli_plain", plain));
    auto http = std::make_shared<http::HttpService>();
    http->MapRpc(impl);  // the REST mapping of the same methods
    ASSERT_TRUE(server_->RegisterService("cli_http", http));
    grpc::EnableHealth(server_);
    reflection::EnableReflection(server_);
    std::string err;
    ASSERT_TRUE(server_->Start(&err)) << err;
    for (auto& [name, addr] :
         {std::pair{"cli_grpc", &grpc_}, std::pair{"cli_trpc", &trpc_}, std::pair{"cli_tls", &tls_},
          std::pair{"cli_plain", &plain_}, std::pair{"cli_http", &http_}}) {
      NetAddress a;
      ASSERT_TRUE(server_->GetAddress(name, &a));
      *addr = a.ToString();
    }
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) server_->Stop();
    delete server_;
    server_ = nullptr;
    runtime::Stop();
    delete certs_;
    certs_ = nullptr;
  }

  // Runs trpc-cli with `args`; its exit code, and stdout + stderr in *out.
  static int Cli(const std::string& args, std::string* out) {
    out->clear();
    return RunShell(fmt::format("timeout 60 {} {}", TRPC_CLI_PATH, args), out);
  }

  // A file holding `lines`, one per line, for -d @FILE (a stream's requests).
  static std::string LinesFile(const std::string& name, std::initializer_list<const char*> lines) {
    const std::string path = fmt::format("{}/{}.jsonl", certs_->dir(), name);
    std::ofstream f(path);
    for (const char* line : lines) f << line << "\n";
    return path;
  }

  static inline trpc::testing::TestCerts* certs_ = nullptr;
  static inline Server* server_ = nullptr;
  static inline std::string grpc_, trpc_, tls_, plain_, http_;
};

TEST_F(TrpcCliTest, ListsDescribesAndCallsOverGrpcTrpcAndTls) {
  const std::string tls_flags = "--ca " + certs_->Pem("ca") + " ";
  for (const std::string& target :
       {"--protocol grpc " + grpc_, "--protocol trpc " + trpc_, tls_flags + tls_}) {
    SCOPED_TRACE(target);
    std::string out;
    ASSERT_EQ(Cli("list " + target, &out), 0) << out;
    EXPECT_NE(out.find("grpc.reflection.v1.ServerReflection\n"), std::string::npos) << out;
    EXPECT_NE(out.find("grpc.testing.TestService\n"), std::string::npos) << out;
    ASSERT_EQ(Cli("list " + target + " grpc.testing.TestService", &out), 0) << out;
    EXPECT_NE(out.find("grpc.testing.TestService.FullDuplexCall\n"), std::string::npos) << out;
    ASSERT_EQ(Cli("describe " + target + " grpc.testing.SimpleRequest", &out), 0) << out;
    EXPECT_EQ(out.rfind("message SimpleRequest {", 0), 0u) << out;
    // Unary, with metadata and compression flags.
    ASSERT_EQ(Cli("call " + target +
                      " grpc.testing.TestService/UnaryCall --gzip -H 'x-note: 1' -d "
                      "'{\"responseSize\": 3}'",
                  &out),
              0)
        << out;
    EXPECT_EQ(out, "{\"payload\":{\"body\":\"AAAA\"}}\n");
    // A server stream: a line per reply.
    ASSERT_EQ(Cli("call " + target +
                      " grpc.testing.TestService.StreamingOutputCall -d "
                      "'{\"responseParameters\": [{\"size\": 1}, {\"size\": 2}]}'",
                  &out),
              0)
        << out;
    EXPECT_EQ(out, "{\"payload\":{\"body\":\"AA==\"}}\n{\"payload\":{\"body\":\"AAA=\"}}\n");
    // A client stream and a bidirectional one: a request per line.
    const std::string input = LinesFile(
        "input", {R"({"payload": {"body": "AAAA"}})", R"({"payload": {"body": "AA=="}})"});
    ASSERT_EQ(
        Cli("call " + target + " /grpc.testing.TestService/StreamingInputCall -d @" + input, &out),
        0)
        << out;
    EXPECT_EQ(out, "{\"aggregatedPayloadSize\":4}\n");
    const std::string duplex = LinesFile("duplex", {R"({"responseParameters": [{"size": 1}]})",
                                                    R"({"responseParameters": [{"size": 2}]})"});
    ASSERT_EQ(
        Cli("call " + target + " grpc.testing.TestService/FullDuplexCall -d @" + duplex, &out), 0)
        << out;
    EXPECT_EQ(out, "{\"payload\":{\"body\":\"AA==\"}}\n{\"payload\":{\"body\":\"AAA=\"}}\n");
  }
  std::string out;
  // A bidirectional echo of 50 messages of 100 KB each way, more than the flow-control windows
  // hold: every reply arrives (trpc-cli reads them while its requests still go out).
  {
    std::string body;  // base64 of 100,000 zero bytes
    for (int i = 0; i < 33333; ++i) body += "AAAA";
    body += "AA==";
    std::ofstream f(certs_->dir() + "/big.jsonl");
    for (int i = 0; i < 50; ++i) {
      f << R"({"responseParameters": [{"size": 100000}], "payload": {"body": ")" << body
        << "\"}}\n";
    }
  }
  ASSERT_EQ(Cli("call " + grpc_ + " grpc.testing.TestService/FullDuplexCall -d @" + certs_->dir() +
                    "/big.jsonl | wc -l",
                &out),
            0)
      << out;
  EXPECT_EQ(out, "50\n");
  // HTTP's REST mapping: unary calls, described by the gRPC port's reflection.
  const std::string http = "--protocol http --reflect " + grpc_ + " ";
  ASSERT_EQ(Cli(http + "call " + http_ +
                    " grpc.testing.TestService/UnaryCall -d "
                    "'{\"responseSize\": 3}'",
                &out),
            0)
      << out;
  EXPECT_EQ(out, "{\"payload\":{\"body\":\"AAAA\"}}\n");
  EXPECT_EQ(Cli(http + "list " + http_, &out), 0) << out;
  EXPECT_NE(out.find("grpc.testing.TestService\n"), std::string::npos) << out;
  EXPECT_EQ(Cli(http + "call " + http_ + " grpc.testing.TestService/StreamingOutputCall", &out), 2)
      << out;
  EXPECT_NE(out.find("HTTP serves unary methods only"), std::string::npos) << out;
  EXPECT_EQ(Cli("health " + grpc_, &out), 0) << out;
  EXPECT_EQ(out, "SERVING\n");
  EXPECT_EQ(Cli("health " + grpc_ + " no.such.Service", &out), 15) << out;  // NOT_FOUND
}

// health --watch follows a server of its own until it stops: SERVING, NOT_SERVING, then the
// call's end (UNAVAILABLE: exit 24).
TEST_F(TrpcCliTest, HealthWatchFollowsTheServerUntilItStops) {
  Config config;
  std::string err;
  ASSERT_TRUE(LoadConfigFromString(
      "server:\n  service:\n    - {name: own, protocol: grpc, ip: 127.0.0.1, port: 0}\n",
      "own.yaml", &config, &err))
      << err;
  Server own(config.server);
  ASSERT_TRUE(own.RegisterService("own", std::make_shared<TestServiceImpl>()));
  grpc::EnableHealth(&own);
  ASSERT_TRUE(own.Start(&err)) << err;
  NetAddress a;
  ASSERT_TRUE(own.GetAddress("own", &a));
  const std::string seen = certs_->dir() + "/watch.out";
  std::string out;
  int rc = -1;
  // The CLI's output goes to a file (it flushes every line), so the test sees the first line
  // while it runs.
  std::thread watcher([&] {
    std::string ignored;
    rc = Cli(fmt::format("--timeout 30000 health --watch {} > {} 2>&1", a.ToString(), seen),
             &ignored);
  });
  EXPECT_TRUE(trpc::testing::WaitFor(
      [&] {
        std::ifstream f(seen);
        std::string line;
        return std::getline(f, line) && line == "SERVING";
      },
      20'000));
  own.Stop();
  watcher.join();
  std::ifstream f(seen);
  out.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  EXPECT_EQ(rc, 24) << out;
  EXPECT_EQ(out.substr(0, 20), "SERVING\nNOT_SERVING\n") << out;
  EXPECT_NE(out.find("the server is stopping"), std::string::npos) << out;
}

TEST_F(TrpcCliTest, GrpcppServerThroughV1alphaADescriptorSetAndProtoFiles) {
#ifndef GRPCPP_INTEROP_SERVER_PATH
  TRPC_SKIP_WITHOUT_PEER("grpcpp_interop_server not built (Debian: libgrpc++-dev)");
#else
  ChildServer peer;
  const std::string addr = peer.Start({GRPCPP_INTEROP_SERVER_PATH, "--port", "0"});
  ASSERT_FALSE(addr.empty());
  std::string out;
  // grpc++ 1.51 serves v1alpha only: v1 is refused, and trpc-cli asks v1alpha.
  ASSERT_EQ(Cli("list " + addr, &out), 0) << out;
  EXPECT_NE(out.find("grpc.reflection.v1alpha.ServerReflection\n"), std::string::npos) << out;
  EXPECT_NE(out.find("grpc.testing.TestService\n"), std::string::npos) << out;
  ASSERT_EQ(Cli("describe " + addr + " grpc.testing.TestService.EmptyCall", &out), 0) << out;
  EXPECT_EQ(out, "rpc EmptyCall(.grpc.testing.Empty) returns (.grpc.testing.Empty);\n");
  const std::string call = " grpc.testing.TestService/UnaryCall -d '{\"responseSize\": 2}'";
  ASSERT_EQ(Cli("call " + addr + call, &out), 0) << out;
  EXPECT_EQ(out, "{\"payload\":{\"body\":\"AAA=\"}}\n");
  const std::string duplex = LinesFile(
      "duplex_grpcpp",
      {R"({"responseParameters": [{"size": 1}]})", R"({"responseParameters": [{"size": 2}]})"});
  ASSERT_EQ(Cli("call " + addr + " grpc.testing.TestService/FullDuplexCall -d @" + duplex, &out), 0)
      << out;
  EXPECT_EQ(out, "{\"payload\":{\"body\":\"AA==\"}}\n{\"payload\":{\"body\":\"AAA=\"}}\n");
  // Without reflection: the .proto files, or a descriptor set made by protoc.
  const std::string protos = std::string("--proto grpc/testing/test.proto -I ") + GRPC_PROTO_DIR;
  ASSERT_EQ(Cli(protos + " call " + addr + call, &out), 0) << out;
  EXPECT_EQ(out, "{\"payload\":{\"body\":\"AAA=\"}}\n");
  // A path on disk, as protoc takes it too.
  ASSERT_EQ(Cli(fmt::format("--proto {0}/grpc/testing/test.proto -I {0} call {1}{2}",
                            GRPC_PROTO_DIR, addr, call),
                &out),
            0)
      << out;
  const std::string set = fmt::format("{}cli_set_{}.bin", ::testing::TempDir(), ::getpid());
  ASSERT_EQ(RunShell(fmt::format("{} -I {} --include_imports --descriptor_set_out={} "
                                 "grpc/testing/test.proto",
                                 PROTOC_PATH, GRPC_PROTO_DIR, set),
                     &out),
            0)
      << out;
  EXPECT_EQ(Cli("--descriptor-set " + set + " call " + addr + call, &out), 0) << out;
  EXPECT_EQ(out, "{\"payload\":{\"body\":\"AAA=\"}}\n");
  std::remove(set.c_str());
  peer.Stop();
#endif
}

TEST_F(TrpcCliTest, ErrorsHaveTheirOwnExitCodes) {
  std::string out;
  // A bad method, bad JSON, JSON of the wrong type: bad input (2).
  EXPECT_EQ(Cli("call " + grpc_ + " grpc.testing.TestService/NoSuch", &out), 2) << out;
  EXPECT_NE(out.find("no method named grpc.testing.TestService/NoSuch"), std::string::npos);
  EXPECT_EQ(
      Cli("call " + grpc_ + " grpc.testing.TestService/UnaryCall -d '{\"responseSize\":'", &out), 2)
      << out;
  EXPECT_NE(out.find("not a grpc.testing.SimpleRequest in JSON"), std::string::npos) << out;
  EXPECT_EQ(Cli("call " + grpc_ + " grpc.testing.TestService/UnaryCall -d '{\"nosuch\": 1}'", &out),
            2)
      << out;
  // The call's own status: 10 + its gRPC code (FAILED_PRECONDITION: 19).
  EXPECT_EQ(Cli("call " + grpc_ +
                    " grpc.testing.TestService/UnaryCall -d "
                    "'{\"responseStatus\": {\"code\": 9, \"message\": \"nope\"}}'",
                &out),
            19)
      << out;
  EXPECT_NE(out.find("nope"), std::string::npos) << out;
  // An unreachable host: UNAVAILABLE (24).
  EXPECT_EQ(Cli("--timeout 3000 list 127.0.0.1:1", &out), 24) << out;
  EXPECT_NE(out.find("Connection refused"), std::string::npos) << out;
  // TLS against a plaintext port, and plaintext against a TLS port: UNAVAILABLE, said so.
  EXPECT_EQ(Cli("--tls --insecure list " + grpc_, &out), 24) << out;
  EXPECT_NE(out.find("TLS"), std::string::npos) << out;
  EXPECT_EQ(Cli("list " + tls_, &out), 24) << out;
  // A certificate from a CA not trusted: UNAVAILABLE, with the verification's reason.
  EXPECT_EQ(Cli("--ca " + certs_->Pem("other_ca") + " list " + tls_, &out), 24) << out;
  EXPECT_NE(out.find("certificate"), std::string::npos) << out;
  // A server without reflection: 3, with what to do instead.
  EXPECT_EQ(Cli("list " + plain_, &out), 3) << out;
  EXPECT_NE(out.find("serves no reflection"), std::string::npos) << out;
  EXPECT_NE(out.find("--proto or --descriptor-set"), std::string::npos) << out;
  // Bad usage: 1.
  EXPECT_EQ(Cli("frobnicate " + grpc_, &out), 1) << out;
  EXPECT_EQ(Cli("list", &out), 1) << out;
  EXPECT_EQ(Cli("--timeout x list " + grpc_, &out), 1) << out;
}

}  // namespace
}  // namespace trpc::test::interop
