// Server reflection (grpc.reflection.v1 and v1alpha) through our client, over gRPC and over trpc
// streams, in the thread model of the run: listing, files by symbol and by name with their
// imports once per stream, the built-in services under their standard packages, errors, and the
// per-service switch.

#include <google/protobuf/descriptor.pb.h>

#include "test/e2e/grpc_e2e_fixture.h"
#include "trpc/server/reflection/reflection.h"
#include "trpc/server/reflection/reflection.pb.h"

namespace trpc::test::grpc_e2e {
namespace {

using grpc_reflection::ServerReflectionRequest;
using grpc_reflection::ServerReflectionResponse;
using Reflect = stream::ClientReaderWriter<ServerReflectionRequest, ServerReflectionResponse>;

Reflect OpenReflection(GreeterServiceProxy* proxy, const char* method, Status* st) {
  ClientContextPtr ctx = MakeClientContext();
  ctx->SetFuncName(method);
  stream::ClientStream opened;
  *st = proxy->OpenStream(ctx, &opened);
  return Reflect(std::move(opened));
}

ServerReflectionResponse Ask(const Reflect& r, const ServerReflectionRequest& req) {
  ServerReflectionResponse rsp;
  EXPECT_TRUE(r.Write(req).OK());
  Status st = r.Read(&rsp, 5000);
  EXPECT_TRUE(st.OK()) << st.ToString();
  return rsp;
}

std::vector<google::protobuf::FileDescriptorProto> Files(const ServerReflectionResponse& rsp) {
  std::vector<google::protobuf::FileDescriptorProto> out;
  for (const std::string& bytes : rsp.file_descriptor_response().file_descriptor_proto()) {
    out.emplace_back();
    EXPECT_TRUE(out.back().ParseFromString(bytes));
  }
  return out;
}

class ReflectionE2eTest : public GrpcE2eTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(ReflectionE2eTest, ListsDescribesAndRefusesBothVersions) {
  const std::string protocol = GetParam();
  const std::string yaml = "      reflection: true\n";
  auto own =
      OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>(), protocol, yaml);
  grpc::EnableHealth(own.get());
  reflection::EnableReflection(own.get());
  auto proxy = Proxy(StartOwn(own.get(), "trpc.test.helloworld.Greeter"), 5000, {}, protocol);
  ASSERT_NE(proxy, nullptr);

  for (const char* method :
       {reflection::kReflectionV1Method, reflection::kReflectionV1AlphaMethod}) {
    SCOPED_TRACE(method);
    Status st;
    Reflect r = OpenReflection(proxy.get(), method, &st);
    ASSERT_TRUE(st.OK()) << st.ToString();
    ServerReflectionRequest req;
    req.set_host("h");
    req.set_list_services("");
    ServerReflectionResponse rsp = Ask(r, req);
    EXPECT_EQ(rsp.valid_host(), "h");
    EXPECT_TRUE(rsp.original_request().has_list_services());
    std::vector<std::string> names;
    for (const auto& s : rsp.list_services_response().service()) names.push_back(s.name());
    std::vector<std::string> want{"grpc.reflection.v1.ServerReflection",
                                  "grpc.reflection.v1alpha.ServerReflection",
                                  "trpc.test.helloworld.Greeter"};
    if (protocol == "grpc") want.insert(want.begin(), "grpc.health.v1.Health");
    EXPECT_EQ(names, want);

    // The service's file, and what it imports, with the service and its methods.
    req.set_file_containing_symbol("trpc.test.helloworld.Greeter");
    auto files = Files(Ask(r, req));
    ASSERT_FALSE(files.empty());
    EXPECT_EQ(files[0].package(), "trpc.test.helloworld");
    ASSERT_GE(files[0].service_size(), 1);
    EXPECT_EQ(files[0].service(0).name(), "Greeter");
    bool has_say_hello = false;
    for (const auto& m : files[0].service(0).method()) has_say_hello |= m.name() == "SayHello";
    EXPECT_TRUE(has_say_hello);
    // Asked again on the same stream: the file itself, not its imports a second time.
    auto again = Files(Ask(r, req));
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].name(), files[0].name());
    // By file name, and a message type's symbol.
    req.set_file_by_filename(files[0].name());
    EXPECT_EQ(Files(Ask(r, req)).at(0).name(), files[0].name());
    req.set_file_containing_symbol("trpc.test.helloworld.HelloRequest");
    EXPECT_EQ(Files(Ask(r, req)).at(0).name(), files[0].name());

    // The built-ins under their standard names, their types renamed too.
    req.set_file_containing_symbol("grpc.reflection.v1alpha.ServerReflection");
    auto refl = Files(Ask(r, req));
    ASSERT_EQ(refl.size(), 1u);
    EXPECT_EQ(refl[0].name(), "grpc/reflection/v1alpha/reflection.proto");
    EXPECT_EQ(refl[0].package(), "grpc.reflection.v1alpha");
    ASSERT_EQ(refl[0].service_size(), 1);
    EXPECT_EQ(refl[0].service(0).method(0).input_type(),
              ".grpc.reflection.v1alpha.ServerReflectionRequest");
    req.set_file_containing_symbol("grpc.health.v1.HealthCheckResponse");
    auto health = Files(Ask(r, req));
    ASSERT_EQ(health.size(), 1u);
    EXPECT_EQ(health[0].package(), "grpc.health.v1");
    EXPECT_EQ(health[0].name(), "grpc/health/v1/health.proto");

    // Unknown names: an error in the response; the stream goes on.
    req.set_file_containing_symbol("no.such.Symbol");
    rsp = Ask(r, req);
    EXPECT_EQ(rsp.error_response().error_code(), 5);  // NOT_FOUND
    req.set_file_by_filename("no/such.proto");
    EXPECT_EQ(Ask(r, req).error_response().error_code(), 5);
    req.set_all_extension_numbers_of_type("trpc.test.helloworld.HelloRequest");
    rsp = Ask(r, req);
    EXPECT_EQ(rsp.all_extension_numbers_response().base_type_name(),
              "trpc.test.helloworld.HelloRequest");
    EXPECT_EQ(rsp.all_extension_numbers_response().extension_number_size(), 0);
    // Only the files of the services served here: a .proto compiled into the program that
    // they do not import stays private.
    req.set_file_containing_symbol("google.protobuf.FieldOptions");
    EXPECT_EQ(Ask(r, req).error_response().error_code(), 5);
    // A huge name: NOT_FOUND, and the message quotes only the start of it.
    req.set_file_containing_symbol(std::string(100'000, 'x'));
    rsp = Ask(r, req);
    EXPECT_EQ(rsp.error_response().error_code(), 5);
    EXPECT_LT(rsp.error_response().error_message().size(), 300u);
    req.set_list_services("");
    EXPECT_EQ(Ask(r, req).list_services_response().service_size(), static_cast<int>(want.size()));
    r.WritesDone();
    EXPECT_TRUE(r.Finish().OK());
  }
  own->Stop();
}

TEST_P(ReflectionE2eTest, SwitchedOffPerServiceAndOffWithoutAdmin) {
  const std::string protocol = GetParam();
  for (const std::string& yaml : {std::string("      reflection: false\n"), std::string()}) {
    auto own =
        OwnServer("trpc.test.helloworld.Greeter", std::make_shared<TestGreeter>(), protocol, yaml);
    reflection::EnableReflection(own.get());
    auto proxy = Proxy(StartOwn(own.get(), "trpc.test.helloworld.Greeter"), 5000, {}, protocol);
    ASSERT_NE(proxy, nullptr);
    Status st;
    Reflect r = OpenReflection(proxy.get(), reflection::kReflectionV1Method, &st);
    ServerReflectionResponse rsp;
    if (st.OK()) {
      ServerReflectionRequest req;
      req.set_list_services("");
      (void)r.Write(req);
      EXPECT_FALSE(r.Read(&rsp, 5000).OK());
      st = r.Finish();
    }
    // No such method: UNIMPLEMENTED over gRPC, "no such function" over trpc.
    EXPECT_EQ(st.GetFrameworkRetCode(), kServerNoFuncErr) << st.ToString();
    own->Stop();
  }
}

INSTANTIATE_TEST_SUITE_P(Protocols, ReflectionE2eTest, ::testing::Values("grpc", "trpc"));

}  // namespace
}  // namespace trpc::test::grpc_e2e
