#pragma once

// What the fault tests share: fault_server started as a child process with a config written for
// the test, and a client runtime (one merge worker) with proxies to it.

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "fmt/format.h"
#include "test/common/child_server.h"
#include "test/common/listen_file.h"
#include "test/common/test_runtime.h"
#include "test/common/thread_model_yaml.h"
#include "trpc/base/net_address.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"
#include "trpc/runtime/detail/runtime.h"

namespace trpc::test::fault {

using helloworld::GreeterServiceProxy;
using helloworld::HelloReply;
using helloworld::HelloRequest;

// The thread model under test: TRPC_FAULT_THREAD_MODEL=fiber|merge (default merge).
inline std::string ModelUnderTest() {
  return trpc::testing::FiberModel("TRPC_FAULT_THREAD_MODEL") ? "fiber" : "merge";
}

struct FaultServerOptions {
  std::string model = ModelUnderTest();
  int workers = 1;
  // Extra keys of the Greeter service entry, each line indented by 6 spaces ("      key: v\n").
  std::string service_yaml;
  // Extra keys of the server section, each line indented by 2 spaces ("  key: v\n").
  std::string server_yaml;
  std::string log_level = "warn";
};

#ifdef FAULT_SERVER_PATH
// Writes the config, starts fault_server and returns its "IP:PORT" ("" with a failure if it did
// not start). With `admin_addr`, the server also serves the admin service on a port the kernel
// picks (`admin_port: auto`), whose "IP:PORT" `*admin_addr` gets from the server's listen file.
inline std::string StartFaultServer(ChildServer* server, const FaultServerOptions& o = {},
                                    std::string* admin_addr = nullptr) {
  static int configs_written = 0;
  std::string path =
      fmt::format("{}fault_server_{}_{}.yaml", ::testing::TempDir(), getpid(), ++configs_written);
  std::string listen_file = path + ".listen";
  std::string admin_yaml =
      admin_addr != nullptr ? "  admin_port: auto\n  listen_file: " + listen_file + "\n" : "";
  std::ofstream(path) << trpc::testing::ThreadModelYaml(o.model == "fiber", {{"fault", o.workers}})
                      << "server:\n"
                      << admin_yaml << o.server_yaml << R"(  service:
    - name: trpc.test.helloworld.Greeter
      ip: 127.0.0.1
      port: 0
)" << o.service_yaml
                      << "plugins:\n  log:\n    level: " << o.log_level << "\n";
  std::string addr = server->Start({FAULT_SERVER_PATH, "--config", path});
  std::remove(path.c_str());
  if (admin_addr != nullptr && !addr.empty()) {
    // Written before the server says it is ready; removed by the server when it stops.
    *admin_addr = trpc::testing::ListenAddress(listen_file, "admin");
    EXPECT_NE(*admin_addr, "") << "no admin line in " << listen_file;
  }
  return addr;
}
#endif  // FAULT_SERVER_PATH

// A process's resident set (VmRSS), in bytes; 0 if it cannot be read.
inline uint64_t RssBytes(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// A plain blocking TCP connection to `addr` ("IP:PORT"), or -1: for bytes no client would send,
// or connections the server may never accept (the kernel completes them from the backlog).
inline int RawConnect(const std::string& addr) {
  NetAddress a;
  if (!NetAddress::Parse(addr, &a)) return -1;
  int fd = socket(a.family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, a.sockaddr_ptr(), a.length()) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// The body of GET `path` from the HTTP server at `addr` ("IP:PORT"; "" if it could not be
// fetched). Host names `addr` itself, as a client that reached it by address would.
inline std::string HttpGet(const std::string& addr, const std::string& path) {
  int fd = RawConnect(addr);
  if (fd < 0) return "";
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n";
  std::string rsp;
  if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) rsp.append(buf, n);
  }
  close(fd);
  size_t body = rsp.find("\r\n\r\n");
  return body == std::string::npos ? "" : rsp.substr(body + 4);
}

// The value of the Prometheus sample `sample` (its name and labels, as the line starts) in
// `metrics`, or -1.
inline double MetricValue(const std::string& metrics, const std::string& sample) {
  size_t at = metrics.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::strtod(metrics.c_str() + at + sample.size() + 2, nullptr);
}

// A test suite with a client runtime: one merge worker.
class FaultTest : public trpc::testing::ClientRuntimeTest {
 protected:
  // A proxy of its own (a fresh connection) to `target`; `c` gives timeout and the rest.
  static std::shared_ptr<GreeterServiceProxy> Proxy(const std::string& target,
                                                    ClientServiceConfig c = {}) {
    c.target = target;
    std::string err;
    auto proxy = GetTrpcClient()->GetProxy<GreeterServiceProxy>(
        fmt::format("fault_greeter_{}", ++proxies_made_), c, &err);
    EXPECT_NE(proxy, nullptr) << err;
    return proxy;
  }

  static Status Call(GreeterServiceProxy* proxy, const std::string& msg, HelloReply* rsp) {
    HelloRequest req;
    req.set_msg(msg);
    return proxy->SayHello(MakeClientContext(), req, rsp);
  }

  static inline int proxies_made_ = 0;
};

}  // namespace trpc::test::fault
