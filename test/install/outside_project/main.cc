// echo_roundtrip: serves outside.echo.Echo on 127.0.0.1 (port 0) and calls it through the
// generated proxy, synchronously and asynchronously. Exit status 0 when both calls succeed.

#include <cstdio>
#include <memory>
#include <string>

#include "proto/echo.trpc.pb.h"
#include "trpc/base/logging.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"
#include "trpc/server/server.h"

namespace {

constexpr char kConfig[] = R"(global:
  threadmodel:
    default:
      - instance_name: outside
        io_handle_type: merge
        io_thread_num: 1
server:
  app: outside
  server: echo
  service:
    - name: outside.echo.Echo
      protocol: trpc
      ip: 127.0.0.1
      port: 0
plugins:
  log:
    level: warn
)";

class EchoImpl final : public outside::echo::Echo {
 public:
  trpc::Status Say(trpc::ServerContextPtr /*context*/, const outside::common::Text* request,
                   outside::common::Text* response) override {
    response->set_text("echo: " + request->text());
    return trpc::kSuccStatus;
  }
};

// Both calls through `proxy`; false (with a message on stderr) if either fails.
bool Call(outside::echo::EchoServiceProxy& proxy) {
  outside::common::Text request;
  request.set_text("hello");
  outside::common::Text response;
  trpc::Status st = proxy.Say(trpc::MakeClientContext(), request, &response);
  if (!st.OK() || response.text() != "echo: hello") {
    std::fprintf(stderr, "sync call failed: %s (reply '%s')\n", st.ToString().c_str(),
                 response.text().c_str());
    return false;
  }
  request.set_text("async");
  auto reply = trpc::BlockingGet(proxy.AsyncSay(trpc::MakeClientContext(), request));
  if (!reply.IsReady()) {
    std::fprintf(stderr, "async call failed: %s\n", reply.GetException().ToString().c_str());
    return false;
  }
  const std::string text = reply.GetValue().text();
  if (text != "echo: async") {
    std::fprintf(stderr, "async call replied '%s'\n", text.c_str());
    return false;
  }
  std::printf("echo_roundtrip: sync and async calls succeeded (%s)\n", text.c_str());
  return true;
}

}  // namespace

int main() {
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfigFromString(kConfig, "echo_roundtrip.yaml", &config, &err) ||
      !trpc::runtime::Start(config.global.threadmodel, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  trpc::log::Level level;
  if (trpc::log::ParseLevel(config.plugins.log.level, &level)) trpc::log::SetLevel(level);
  bool ok = false;
  {
    trpc::Server server(config.server);
    server.RegisterService("outside.echo.Echo", std::make_shared<EchoImpl>());
    trpc::NetAddress address;
    if (!server.Start(&err) || !server.GetAddress("outside.echo.Echo", &address)) {
      std::fprintf(stderr, "server: %s\n", err.c_str());
    } else {
      trpc::ClientServiceConfig client;
      client.name = "outside.echo.Echo";
      client.target = address.ToString();
      client.timeout = 10000;
      outside::echo::EchoServiceProxy proxy(client, trpc::runtime::GetThreadModel());
      if (!proxy.Init(&err)) {
        std::fprintf(stderr, "proxy: %s\n", err.c_str());
      } else {
        ok = Call(proxy);
      }
      proxy.Stop();
    }
    server.Stop();
  }
  trpc::runtime::Stop();
  return ok ? 0 : 1;
}
