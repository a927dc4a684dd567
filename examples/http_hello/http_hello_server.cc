// http_hello_server --config FILE: an HTTP/1.1 server in a few lines, in the thread model the
// config chooses. GET / answers "{}" (the usual Go net/http benchmark body), GET /hello answers
// "Hello, World!" (the usual fasthttp benchmark body), GET /users/{id} shows a path
// parameter, and POST /trpc.test.helloworld.Greeter/SayHello serves the Greeter RPC with a JSON
// or protobuf body (the REST mapping). Runs until SIGINT or SIGTERM.

#include <cstdio>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"
#include "trpc/server/http/http_service.h"

namespace {

using trpc::http::HttpRequest;
using trpc::http::HttpResponse;

class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  trpc::Status SayHello(trpc::ServerContextPtr ctx, const trpc::test::helloworld::HelloRequest* req,
                        trpc::test::helloworld::HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return trpc::kSuccStatus;
  }
};

class HttpHelloServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    auto http = std::make_shared<trpc::http::HttpService>();
    http->Get("/", [](const trpc::ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
      rsp->SetBody("{}", "application/json");
    });
    http->Get("/hello", [](const trpc::ServerContextPtr&, const HttpRequest&, HttpResponse* rsp) {
      rsp->SetBody("Hello, World!", "text/plain");
    });
    http->Get("/users/{id}",
              [](const trpc::ServerContextPtr&, const HttpRequest& req, HttpResponse* rsp) {
                rsp->SetBody("{\"id\":\"" + *req.PathParam("id") + "\"}", "application/json");
              });
    http->MapRpc(std::make_shared<GreeterImpl>());
    // The `server.service[].name` this service is configured under.
    RegisterService("trpc.test.http_hello.Http", http);
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  HttpHelloServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  std::printf("http_hello_server ready\n");
  std::fflush(stdout);
  app.Wait();
  return 0;
}
