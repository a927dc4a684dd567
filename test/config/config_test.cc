#include "trpc/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "trpc/server/reflection/reflection.h"

namespace trpc {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The config example of docs/config.md, with the fiber thread model.
constexpr const char* kDesignExampleFiber = R"(global:
  threadmodel:
    fiber:
      - instance_name: fiber_instance
        concurrency_hint: 2
        scheduling_group_size: 0
        fiber_stack_size: 131072
        work_stealing_ratio: 16
server:
  app: test
  server: helloworld
  admin_port: 8888
  service:
    - name: trpc.test.helloworld.Greeter
      protocol: trpc
      network: tcp
      ip: 127.0.0.1
      port: 12345
      max_conn_num: 10000
      idle_time: 60000
      max_packet_size: 10000000
      timeout: 1000
client:
  service:
    - name: trpc.test.helloworld.Greeter
      target: 127.0.0.1:12345
      protocol: trpc
      timeout: 1000
      conn_type: long
plugins:
  log: {level: info}
)";

Config MustLoad(std::string_view yaml) {
  Config config;
  std::string error;
  EXPECT_TRUE(LoadConfigFromString(yaml, "t.yaml", &config, &error)) << error;
  return config;
}

// Loads `yaml` expecting failure; returns the error text.
std::string LoadError(std::string_view yaml) {
  Config config;
  std::string error;
  EXPECT_FALSE(LoadConfigFromString(yaml, "t.yaml", &config, &error));
  return error;
}

// A config with one service whose extra keys are `extra` (indented to the service's level).
std::string OneService(std::string_view extra) {
  return "server:\n"              // 1
         "  service:\n"           // 2
         "    - name: svc\n"      // 3
         "      port: 10000\n" +  // 4
         std::string(extra);      // 5...
}

TEST(ConfigTest, DesignExampleFiber) {
  Config c = MustLoad(kDesignExampleFiber);
  EXPECT_EQ(c.path, "t.yaml");
  ASSERT_EQ(c.global.threadmodel.fiber.size(), 1u);
  EXPECT_TRUE(c.global.threadmodel.merge.empty());
  const FiberThreadModelConfig& f = c.global.threadmodel.fiber[0];
  EXPECT_EQ(f.instance_name, "fiber_instance");
  EXPECT_EQ(f.concurrency_hint, 2u);
  EXPECT_EQ(f.scheduling_group_size, 0u);
  EXPECT_EQ(f.fiber_stack_size, 131072u);
  EXPECT_EQ(f.work_stealing_ratio, 16u);
  EXPECT_EQ(f.fiber_run_queue_size, 65536u);

  EXPECT_EQ(c.server.app, "test");
  EXPECT_EQ(c.server.server, "helloworld");
  EXPECT_EQ(c.server.admin_port, 8888);
  EXPECT_EQ(c.server.admin_ip, "127.0.0.1");
  EXPECT_TRUE(c.server.admin_allowed_hosts.empty());
  ASSERT_EQ(c.server.service.size(), 1u);
  const ServiceConfig& s = c.server.service[0];
  EXPECT_EQ(s.name, "trpc.test.helloworld.Greeter");
  EXPECT_EQ(s.protocol, "trpc");
  EXPECT_EQ(s.network, "tcp");
  EXPECT_EQ(s.ip, "127.0.0.1");
  EXPECT_EQ(s.port, 12345);
  EXPECT_EQ(s.max_conn_num, 10000u);
  EXPECT_EQ(s.idle_time, 60000u);
  EXPECT_EQ(s.max_packet_size, 10000000u);
  EXPECT_EQ(s.timeout, 1000u);
  EXPECT_EQ(s.max_pending_write_bytes, 64u << 20);
  EXPECT_EQ(s.threadmodel_instance_name, "");
  EXPECT_EQ(s.origin, "t.yaml:14");

  ASSERT_EQ(c.client.service.size(), 1u);
  const ClientServiceConfig& cs = c.client.service[0];
  EXPECT_EQ(cs.name, "trpc.test.helloworld.Greeter");
  EXPECT_EQ(cs.target, "127.0.0.1:12345");
  EXPECT_EQ(cs.protocol, "trpc");
  EXPECT_EQ(cs.timeout, 1000u);
  EXPECT_EQ(cs.conn_type, "long");
  EXPECT_EQ(cs.max_conn_num, 0u);
  EXPECT_EQ(cs.pipeline_depth, 1u);
  EXPECT_EQ(cs.max_packet_size, 10000000u);
  EXPECT_EQ(cs.connect_timeout, 3000u);
  EXPECT_EQ(cs.origin, "t.yaml:25");

  EXPECT_EQ(c.plugins.log.level, "info");
}

TEST(ConfigTest, DesignExampleMerge) {
  std::string yaml = kDesignExampleFiber;
  std::string fiber_part = yaml.substr(0, yaml.find("server:"));
  yaml.replace(0, fiber_part.size(),
               "global:\n"
               "  threadmodel:\n"
               "    default:\n"
               "      - instance_name: default_instance\n"
               "        io_handle_type: merge\n"
               "        io_thread_num: 4\n");
  Config c = MustLoad(yaml);
  EXPECT_TRUE(c.global.threadmodel.fiber.empty());
  ASSERT_EQ(c.global.threadmodel.merge.size(), 1u);
  EXPECT_EQ(c.global.threadmodel.merge[0].instance_name, "default_instance");
  EXPECT_EQ(c.global.threadmodel.merge[0].io_thread_num, 4u);
  ASSERT_EQ(c.server.service.size(), 1u);
  EXPECT_EQ(c.server.service[0].port, 12345);
}

TEST(ConfigTest, EmptyDocumentGivesDefaults) {
  Config expected;
  expected.path = "t.yaml";
  EXPECT_EQ(MustLoad(""), expected);
  EXPECT_EQ(MustLoad("# only a comment\n"), expected);
  EXPECT_EQ(MustLoad("---\n"), expected);
  // Sections present but empty (everything under them commented out) are empty too.
  EXPECT_EQ(MustLoad("global:\n  threadmodel:\nserver:\nclient:\n  service:\nplugins:\n  log:\n"),
            expected);
  EXPECT_EQ(MustLoad("global: {threadmodel: {default: [], fiber: []}}\n"), expected);
}

TEST(ConfigTest, DocumentedDefaults) {
  Config c;
  ASSERT_EQ(c.global.threadmodel.merge.size(), 1u);
  EXPECT_EQ(c.global.threadmodel.merge[0].instance_name, "default_instance");
  EXPECT_EQ(c.global.threadmodel.merge[0].io_thread_num, 1u);
  EXPECT_TRUE(c.global.threadmodel.fiber.empty());
  EXPECT_EQ(c.server.admin_port, 0);
  EXPECT_FALSE(c.server.admin_port_auto);
  EXPECT_FALSE(c.server.admin_enabled());
  EXPECT_EQ(c.server.admin_ip, "127.0.0.1");
  EXPECT_EQ(c.server.listen_file, "");
  EXPECT_EQ(c.plugins.log.level, "info");

  FiberThreadModelConfig f =
      MustLoad("global: {threadmodel: {fiber: [{}]}}").global.threadmodel.fiber.at(0);
  EXPECT_EQ(f, FiberThreadModelConfig{});
  EXPECT_EQ(f.instance_name, "fiber_instance");
  EXPECT_EQ(f.concurrency_hint, 0u);
  EXPECT_EQ(f.scheduling_group_size, 0u);
  EXPECT_EQ(f.fiber_stack_size, 131072u);
  EXPECT_EQ(f.work_stealing_ratio, 16u);
  EXPECT_EQ(f.fiber_run_queue_size, 65536u);

  ServiceConfig s = MustLoad(OneService("")).server.service.at(0);
  EXPECT_EQ(s.protocol, "trpc");
  EXPECT_EQ(s.network, "tcp");
  EXPECT_EQ(s.ip, "0.0.0.0");
  EXPECT_EQ(s.max_conn_num, 10000u);
  EXPECT_EQ(s.idle_time, 60000u);
  EXPECT_EQ(s.max_packet_size, 10000000u);
  EXPECT_EQ(s.timeout, 1000u);
  EXPECT_EQ(s.max_pending_write_bytes, 64u * 1024 * 1024);
  EXPECT_EQ(s.threadmodel_instance_name, "");

  ClientServiceConfig cs =
      MustLoad("client: {service: [{name: a, target: '10.0.0.1:80'}]}").client.service.at(0);
  EXPECT_EQ(cs.protocol, "trpc");
  EXPECT_EQ(cs.timeout, 1000u);
  EXPECT_EQ(cs.conn_type, "long");
  EXPECT_EQ(cs.max_conn_num, 0u);
  EXPECT_EQ(cs.pipeline_depth, 1u);
}

TEST(ConfigTest, AcceptsBoundaryValues) {
  Config c = MustLoad(
      "global:\n"
      "  threadmodel:\n"
      "    fiber:\n"
      "      - instance_name: f\n"
      "        concurrency_hint: 1024\n"
      "        fiber_stack_size: 16384\n"
      "        fiber_run_queue_size: 256\n"
      "        work_stealing_ratio: 1000000\n"
      "server:\n"
      "  service:\n"
      "    - name: a\n"
      "      port: \"0\"\n"  // Quoting a number is fine.
      "      idle_time: 0\n"
      "      timeout: 4294967295\n"
      "      max_pending_write_bytes: 18446744073709551615\n"
      "      threadmodel_instance_name: f\n"
      "      ip: '::'\n"
      "    - name: b\n"
      "      port: 0\n"  // Two ephemeral ports never collide.
      "      max_packet_size: 16\n");
  const FiberThreadModelConfig& f = c.global.threadmodel.fiber.at(0);
  EXPECT_EQ(f.concurrency_hint, 1024u);
  EXPECT_EQ(f.fiber_stack_size, 16384u);
  EXPECT_EQ(f.fiber_run_queue_size, 256u);
  EXPECT_EQ(f.work_stealing_ratio, 1000000u);
  const ServiceConfig& a = c.server.service.at(0);
  EXPECT_EQ(a.port, 0);
  EXPECT_EQ(a.idle_time, 0u);
  EXPECT_EQ(a.timeout, 4294967295u);
  EXPECT_EQ(a.max_pending_write_bytes, UINT64_MAX);
  EXPECT_EQ(a.threadmodel_instance_name, "f");
  EXPECT_EQ(a.ip, "::");
  EXPECT_EQ(c.server.service.at(1).max_packet_size, 16u);
}

TEST(ConfigTest, ClientTargets) {
  Config c = MustLoad(
      "client:\n"
      "  service:\n"
      "    - name: a\n"
      "      target: 10.0.0.1:80, 10.0.0.2:81,[::1]:8080\n"
      "      conn_type: short\n"
      "      max_conn_num: 1024\n"
      "      pipeline_depth: 16\n"
      "      max_packet_size: 20000000\n"
      "      connect_timeout: 0\n");
  EXPECT_EQ(c.client.service.at(0).target, "10.0.0.1:80, 10.0.0.2:81,[::1]:8080");
  EXPECT_EQ(c.client.service.at(0).max_packet_size, 20000000u);
  EXPECT_EQ(c.client.service.at(0).connect_timeout, 0u);
  EXPECT_EQ(c.client.service.at(0).conn_type, "short");
  EXPECT_EQ(c.client.service.at(0).max_conn_num, 1024u);
  EXPECT_EQ(c.client.service.at(0).pipeline_depth, 16u);
}

TEST(ConfigTest, ClientProtocolOptionsKeepTheirLines) {
  Config c = MustLoad(
      "client:\n"
      "  service:\n"
      "    - name: a\n"
      "      target: 10.0.0.1:80\n"
      "      protocol: grpc\n"
      "      protocol_options:\n"
      "        max_message_size: 1048576\n"
      "        initial_window_size: 65535\n");
  const ClientServiceConfig& s = c.client.service.at(0);
  EXPECT_EQ(s.protocol_options.at("max_message_size"), "1048576");
  EXPECT_EQ(s.protocol_options.at("initial_window_size"), "65535");
  EXPECT_NE(s.protocol_option_origin.at("max_message_size").find(":7"), std::string::npos);
  EXPECT_NE(s.protocol_option_origin.at("initial_window_size").find(":8"), std::string::npos);
}

TEST(ConfigTest, NamingKeys) {
  Config c = MustLoad(
      "server:\n"                                // 1
      "  registry_name: etcd\n"                  // 2
      "  deregister_wait: 250\n"                 // 3
      "  service:\n"                             // 4
      "    - name: svc\n"                        // 5
      "      port: 10000\n"                      // 6
      "      namespace: prod\n"                  // 7
      "      weight: 300\n"                      // 8
      "      advertise_ip: 10.0.0.7\n"           // 9
      "client:\n"                                // 10
      "  service:\n"                             // 11
      "    - name: a\n"                          // 12
      "      target: trpc.app.server.Service\n"  // 13
      "      selector_name: etcd\n"              // 14
      "      namespace: prod\n"                  // 15
      "      load_balance_name: p2c\n"           // 16
      "      outlier_ejection: {consecutive_failures: 3, base_ejection_time: 500}\n"
      "      retry: {methods: [SayHello, \"/a.B/C\"], max_attempts: 4, codes: [21, 31]}\n"
      "      hedging: {methods: [\"*\"], delay: 7}\n"
      "plugins:\n"                         // 20
      "  selector:\n"                      // 21
      "    etcd:\n"                        // 22
      "      endpoints: 127.0.0.1:2379\n"  // 23
      "  registry:\n"                      // 24
      "    etcd: {ttl: 5}\n");             // 25
  EXPECT_EQ(c.server.registry_name, "etcd");
  EXPECT_EQ(c.server.deregister_wait, 250u);
  EXPECT_EQ(c.server.service.at(0).name_space, "prod");
  EXPECT_EQ(c.server.service.at(0).weight, 300u);
  EXPECT_EQ(c.server.service.at(0).advertise_ip, "10.0.0.7");
  const ClientServiceConfig& s = c.client.service.at(0);
  EXPECT_EQ(s.target, "trpc.app.server.Service");  // not an address: only direct checks it
  EXPECT_EQ(s.selector_name, "etcd");
  EXPECT_EQ(s.load_balance_name, "p2c");
  EXPECT_EQ(s.outlier_ejection.consecutive_failures, 3u);
  EXPECT_EQ(s.outlier_ejection.base_ejection_time, 500u);
  EXPECT_EQ(s.outlier_ejection.max_ejection_time, 30000u);
  EXPECT_EQ(s.retry.methods, (std::vector<std::string>{"SayHello", "/a.B/C"}));
  EXPECT_EQ(s.retry.max_attempts, 4u);
  EXPECT_EQ(s.retry.codes, (std::vector<uint32_t>{21, 31}));
  EXPECT_EQ(s.hedging.methods, (std::vector<std::string>{"*"}));
  EXPECT_EQ(s.hedging.delay, 7u);
  EXPECT_EQ(c.plugins.selector.at("etcd").values.at("endpoints"), "127.0.0.1:2379");
  EXPECT_EQ(c.plugins.selector.at("etcd").At("endpoints"), "t.yaml:23: ");
  EXPECT_EQ(c.plugins.registry.at("etcd").values.at("ttl"), "5");
  // A nested mapping (the plug-in's `ssl:`) gives dotted keys with their lines; a list of
  // scalars one value joined with ','.
  Config t = MustLoad(
      "plugins:\n"                                 // 1
      "  registry:\n"                              // 2
      "    etcd:\n"                                // 3
      "      ssl:\n"                               // 4
      "        enable: true\n"                     // 5
      "        protocols: [TLSv1.2, TLSv1.3]\n");  // 6
  const PluginOptions& etcd = t.plugins.registry.at("etcd");
  EXPECT_EQ(etcd.values.at("ssl.enable"), "true");
  EXPECT_EQ(etcd.values.at("ssl.protocols"), "TLSv1.2,TLSv1.3");
  EXPECT_EQ(etcd.At("ssl"), "t.yaml:4: ");
  EXPECT_EQ(etcd.At("ssl.protocols"), "t.yaml:6: ");
  EXPECT_EQ(etcd.values.count("ssl"), 0u);
}

TEST(ConfigErrorTest, NamingKeys) {
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: x:1\n"),
            "t.yaml:4: client.service[0].target: expected ip:port[,ip:port...] (IPv6 as "
            "[addr]:port, port 1..65535), got 'x:1'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: b\n"
                      "      retry: {max_attempts: 1}\n"),
            "t.yaml:5: client.service[0].retry.max_attempts: expected an integer in 2..10, got "
            "'1'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                      "      retry: {codes: [abc]}\n"),
            "t.yaml:5: client.service[0].retry.codes: expected framework return codes "
            "(1..9999), got 'abc'");
  EXPECT_EQ(
      LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                "      outlier_ejection: {base_ejection_time: 5000, max_ejection_time: 10}\n"),
      "t.yaml:5: client.service[0].outlier_ejection.max_ejection_time: must be at least "
      "base_ejection_time (5000 ms), got 10");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                      "      hedging: {dealy: 5}\n"),
            "t.yaml:5: unknown key 'dealy' in client.service[0].hedging (did you mean 'delay'?)");
  EXPECT_EQ(LoadError("plugins:\n  selector:\n    etcd: [1]\n"),
            "t.yaml:3: plugins.selector.etcd: expected a mapping of settings, got a list");
  EXPECT_EQ(LoadError("plugins:\n  selector:\n    etcd:\n      ssl: {a: {b: c}}\n"),
            "t.yaml:4: plugins.selector.etcd: expected 'name: value' pairs of scalars (or lists "
            "of them, or one level of such mappings)");
  EXPECT_EQ(LoadError(OneService("      weight: 0\n")),
            "t.yaml:5: server.service[0].weight: expected an integer in 1..10000, got '0'");
}

// `ssl:` on a service and a callee: tRPC-Cpp's keys and ours, each with its line (the files are
// checked when the service starts, with these lines).
TEST(ConfigTest, TlsKeys) {
  Config c = MustLoad(
      "server:\n"                           // 1
      "  service:\n"                        // 2
      "    - name: svc\n"                   // 3
      "      port: 10000\n"                 // 4
      "      ssl:\n"                        // 5
      "        enable: true\n"              // 6
      "        cert_path: /c.pem\n"         // 7
      "        private_key_path: /k.pem\n"  // 8
      "        mutual_auth: true\n"         // 9
      "        ca_cert_path: /ca.pem\n"     // 10
      "        protocols: [TLSv1.3]\n"      // 11
      "        handshake_timeout: 250\n"    // 12
      "        max_handshakes: 8\n"         // 13
      "client:\n"                           // 14
      "  service:\n"                        // 15
      "    - name: callee\n"                // 16
      "      target: 127.0.0.1:1\n"         // 17
      "      ssl: {enable: true, sni_name: api.test, verify_peer_name: false, insecure: true}\n");
  const TlsConfig& s = c.server.service.at(0).ssl;
  EXPECT_TRUE(s.enable);
  EXPECT_EQ(s.cert_path, "/c.pem");
  EXPECT_EQ(s.private_key_path, "/k.pem");
  EXPECT_TRUE(s.mutual_auth);
  EXPECT_EQ(s.ca_cert_path, "/ca.pem");
  EXPECT_EQ(s.protocols, std::vector<std::string>{"TLSv1.3"});
  EXPECT_EQ(s.handshake_timeout, 250u);
  EXPECT_EQ(s.max_handshakes, 8u);
  EXPECT_EQ(s.origin, "t.yaml:6");
  EXPECT_EQ(s.OriginOf("cert_path"), "t.yaml:7");
  EXPECT_EQ(s.OriginOf("max_handshakes"), "t.yaml:13");
  EXPECT_EQ(s.OriginOf("crl_path"), "t.yaml:6");  // not given: the section's
  const TlsConfig& k = c.client.service.at(0).ssl;
  EXPECT_TRUE(k.enable);
  EXPECT_EQ(k.sni_name, "api.test");
  EXPECT_FALSE(k.verify_peer_name);
  EXPECT_TRUE(k.insecure);
  EXPECT_EQ(k.handshake_timeout, 5000u);  // the default
  // Without the section: off, with the documented defaults.
  EXPECT_EQ(MustLoad(OneService("")).server.service.at(0).ssl, TlsConfig{});
}

TEST(ConfigErrorTest, TlsKeys) {
  EXPECT_EQ(LoadError(OneService("      ssl: {enable: yes}\n")),
            "t.yaml:5: server.service[0].ssl.enable: expected one of true|false, got 'yes'");
  EXPECT_EQ(LoadError(OneService("      ssl: {cert_pth: /c.pem}\n")),
            "t.yaml:5: unknown key 'cert_pth' in server.service[0].ssl (did you mean "
            "'cert_path'?)");
  EXPECT_EQ(LoadError(OneService("      ssl: {handshake_timeout: 0}\n")),
            "t.yaml:5: server.service[0].ssl.handshake_timeout: expected an integer in "
            "1..600000, got '0'");
  EXPECT_EQ(LoadError(OneService("      ssl: {protocols: TLSv1.2}\n")),
            "t.yaml:5: server.service[0].ssl.protocols: expected a list of strings, got "
            "'TLSv1.2'");
}

TEST(ConfigTest, AdminAuthKeys) {
  Config c = MustLoad(
      "server:\n"                                 // 1
      "  admin_port: 9999\n"                      // 2
      "  admin_ip: 0.0.0.0\n"                     // 3
      "  admin_token_file: /run/secrets/admin\n"  // 4
      "  admin_ssl: {enable: true, cert_path: /c, private_key_path: /k}\n");
  EXPECT_EQ(c.server.admin_token_file, "/run/secrets/admin");
  EXPECT_EQ(c.server.admin_token_file_origin, "t.yaml:4");
  EXPECT_TRUE(c.server.admin_ssl.enable);
  EXPECT_EQ(c.server.admin_ssl.cert_path, "/c");
  EXPECT_EQ(c.server.admin_ssl.origin, "t.yaml:5");
  EXPECT_FALSE(c.server.admin_allow_unauthenticated);
  // Either TLS, a token or the explicit key lets the admin out of loopback.
  MustLoad("server: {admin_port: 1, admin_ip: '::', admin_token: abcdefghijklmnop}\n");
  MustLoad("server: {admin_port: 1, admin_ip: 10.0.0.1, admin_ssl: {enable: true}}\n");
  EXPECT_TRUE(MustLoad("server: {admin_port: 1, admin_ip: 10.0.0.1, "
                       "admin_allow_unauthenticated: true}\n")
                  .server.admin_allow_unauthenticated);
  // On loopback nothing is needed.
  MustLoad("server: {admin_port: 1, admin_ip: 127.0.0.2}\n");
  MustLoad("server: {admin_port: 1, admin_ip: '::1'}\n");
}

TEST(ConfigErrorTest, AdminAuthKeys) {
  EXPECT_EQ(LoadError("server:\n  admin_port: 9000\n  admin_ip: 0.0.0.0\n"),
            "t.yaml:3: server.admin_ip: the admin service on 0.0.0.0 would be reachable beyond "
            "loopback with no authentication (anyone reaching it could read metrics, change the "
            "log level and take CPU profiles): set server.admin_ssl (with mutual_auth to check "
            "clients), server.admin_token or server.admin_token_file, or say "
            "server.admin_allow_unauthenticated: true");
  EXPECT_EQ(LoadError("server:\n  admin_token: short\n"),
            "t.yaml:2: server.admin_token: expected a token of at least 16 characters, got 5");
  EXPECT_EQ(LoadError("server:\n  admin_token: 'has space in it, sixteen+'\n"),
            "t.yaml:2: server.admin_token: expected a token of letters, digits and -._~+/= (a "
            "bearer token's characters)");
  EXPECT_EQ(LoadError("server:\n  admin_token: abcdefghijklmnop\n  admin_token_file: /t\n"),
            "t.yaml:3: server.admin_token_file: set admin_token or admin_token_file, not both");
  EXPECT_EQ(LoadError("server:\n  admin_ssl: {enable: on}\n"),
            "t.yaml:2: server.admin_ssl.enable: expected one of true|false, got 'on'");
  EXPECT_EQ(LoadError("server:\n  admin_allow_unauthenticated: yes\n"),
            "t.yaml:2: server.admin_allow_unauthenticated: expected one of true|false, got 'yes'");
}

TEST(ConfigTest, TracingSection) {
  Config c = MustLoad("plugins:\n  log: {level: error}\n");
  EXPECT_FALSE(c.plugins.tracing.enabled);
  c = MustLoad(
      "plugins:\n"                                       // 1
      "  tracing:\n"                                     // 2
      "    sampler_ratio: 0.25\n"                        // 3
      "    endpoint: http://127.0.0.1:4318/v1/traces\n"  // 4
      "    queue_size: 4096\n    batch_size: 100\n    batch_timeout: 200\n"
      "    export_timeout: 1000\n    service_name: svc\n");
  const tracing::TracingConfig& t = c.plugins.tracing;
  EXPECT_TRUE(t.enabled);
  EXPECT_DOUBLE_EQ(t.sampler_ratio, 0.25);
  EXPECT_EQ(t.endpoint, "http://127.0.0.1:4318/v1/traces");
  EXPECT_EQ(t.queue_size, 4096u);
  EXPECT_EQ(t.batch_size, 100u);
  EXPECT_EQ(t.batch_timeout, 200u);
  EXPECT_EQ(t.export_timeout, 1000u);
  EXPECT_EQ(t.service_name, "svc");
  EXPECT_EQ(t.origin, "t.yaml:4");
  // An empty section turns tracing on with the defaults.
  EXPECT_TRUE(MustLoad("plugins:\n  tracing: {}\n").plugins.tracing.enabled);
}

TEST(ConfigErrorTest, TracingSection) {
  EXPECT_EQ(LoadError("plugins:\n  tracing:\n    sampler_ratio: 1.5\n"),
            "t.yaml:3: plugins.tracing.sampler_ratio: expected a number from 0 to 1, got '1.5'");
  EXPECT_EQ(LoadError("plugins:\n  tracing:\n    sampler_ratio: half\n"),
            "t.yaml:3: plugins.tracing.sampler_ratio: expected a number from 0 to 1, got 'half'");
  EXPECT_EQ(LoadError("plugins:\n  tracing:\n    endpoint: https://c:4318\n"),
            "t.yaml:3: plugins.tracing.endpoint: expected an http://host:port/path URL (https is "
            "not supported yet), got 'https://c:4318'");
  EXPECT_EQ(LoadError("plugins:\n  tracing:\n    batch_size: 0\n"),
            "t.yaml:3: plugins.tracing.batch_size: expected an integer in 1..65536, got '0'");
  EXPECT_EQ(LoadError("plugins:\n  tracing:\n    sampler: 1\n"),
            "t.yaml:3: unknown key 'sampler' in plugins.tracing");
}

// tRPC-Cpp's logger list: the first logger's file sink, rotation, mode and level.
TEST(ConfigTest, LogDefaultSection) {
  Config c = MustLoad(
      "plugins:\n"
      "  log:\n"
      "    default:\n"
      "      - name: default\n"
      "        min_level: 1\n"
      "        format: \"[%Y-%m-%d %H:%M:%S.%e] %v\"\n"
      "        mode: 1\n"
      "        sinks:\n"
      "          local_file:\n"
      "            filename: /var/log/app/trpc.log\n"
      "            roll_type: by_size\n"
      "            roll_size: 10000000\n"
      "            reserve_count: 5\n");
  const LogConfig& l = c.plugins.log;
  EXPECT_TRUE(l.has_default);
  EXPECT_EQ(l.level, "debug");  // tRPC-Cpp's 1
  EXPECT_EQ(l.output.filename, "/var/log/app/trpc.log");
  EXPECT_EQ(l.output.roll, log::Output::Roll::kBySize);
  EXPECT_EQ(l.output.roll_size, 10000000u);
  EXPECT_EQ(l.output.reserve_count, 5u);
  EXPECT_FALSE(l.output.async);
  EXPECT_FALSE(l.output.json);  // a pattern: our text lines
  c = MustLoad(
      "plugins:\n  log:\n    default:\n      - {name: d, min_level: warn, format: json, "
      "sinks: {local_file: {filename: a.log, roll_type: by_day}}}\n");
  EXPECT_EQ(c.plugins.log.level, "warn");
  EXPECT_TRUE(c.plugins.log.output.json);
  EXPECT_TRUE(c.plugins.log.output.async);  // mode 2, the default
  EXPECT_EQ(c.plugins.log.output.roll, log::Output::Roll::kByDay);
  // No local_file sink: stderr, as without the section.
  c = MustLoad("plugins:\n  log:\n    default:\n      - {name: d, sinks: {stdout: {}}}\n");
  EXPECT_TRUE(c.plugins.log.output.filename.empty());
}

TEST(ConfigErrorTest, LogDefaultSection) {
  const std::string head = "plugins:\n  log:\n    default:\n      - name: d\n";
  EXPECT_EQ(LoadError(head + "        min_level: 7\n"),
            "t.yaml:5: plugins.log.default[0].min_level: expected 0..5 or a level name, got '7'");
  EXPECT_EQ(LoadError(head + "        mode: 4\n"),
            "t.yaml:5: plugins.log.default[0].mode: expected one of 1|2|3, got '4'");
  EXPECT_EQ(LoadError(head + "        sinks:\n          local_file: {roll_type: by_size}\n"),
            "t.yaml:6: plugins.log.default[0].sinks.local_file: missing required key "
            "'filename'");
  EXPECT_EQ(LoadError(head + "        sinks:\n          local_file: {filename: a, roll_type: "
                             "weekly}\n"),
            "t.yaml:6: plugins.log.default[0].sinks.local_file.roll_type: expected one of "
            "by_size|by_day|by_hour, got 'weekly'");
}

TEST(ConfigTest, AdminGrpcMetricsKey) {
  EXPECT_FALSE(MustLoad("server: {admin_port: 1}\n").server.admin_grpc_metrics);
  EXPECT_TRUE(
      MustLoad("server: {admin_port: 1, admin_grpc_metrics: true}\n").server.admin_grpc_metrics);
  EXPECT_EQ(LoadError("server:\n  admin_port: 1\n  admin_grpc_metrics: 1\n"),
            "t.yaml:3: server.admin_grpc_metrics: expected one of true|false, got '1'");
}

TEST(ConfigTest, ReflectionKey) {
  const char* svc = "server:\n  service:\n    - {name: s, protocol: grpc, port: 1";
  Config c = MustLoad(std::string(svc) + "}\n");
  EXPECT_FALSE(c.server.service[0].reflection.has_value());  // unset: follows the admin service
  EXPECT_FALSE(reflection::ReflectionEnabled(c.server, c.server.service[0]));
  c.server.admin_port = 9000;
  EXPECT_TRUE(reflection::ReflectionEnabled(c.server, c.server.service[0]));
  c = MustLoad(std::string(svc) + ", reflection: false}\n  admin_port: 9000\n");
  EXPECT_FALSE(reflection::ReflectionEnabled(c.server, c.server.service[0]));
  c = MustLoad(std::string(svc) + ", reflection: true}\n");
  EXPECT_TRUE(reflection::ReflectionEnabled(c.server, c.server.service[0]));
  c.server.service[0].protocol = "http";  // not a protocol reflection is served on
  EXPECT_FALSE(reflection::ReflectionEnabled(c.server, c.server.service[0]));
  EXPECT_EQ(LoadError(std::string(svc) + ", reflection: yes}\n"),
            "t.yaml:3: server.service[0].reflection: expected one of true|false, got 'yes'");
}

TEST(ConfigTest, ThreadModelInstanceNames) {
  Config c = MustLoad(
      "global:\n"
      "  threadmodel:\n"
      "    default:\n"
      "      - {instance_name: a, io_thread_num: 2}\n"
      "      - {instance_name: b}\n"
      "server:\n"
      "  service:\n"
      "    - {name: s1, port: 1, threadmodel_instance_name: b}\n");
  EXPECT_EQ(c.global.threadmodel.merge.size(), 2u);
  EXPECT_EQ(c.server.service.at(0).threadmodel_instance_name, "b");
  // The implicit default instance can be named too.
  MustLoad(OneService("      threadmodel_instance_name: default_instance\n"));
}

TEST(ConfigTest, LogLevels) {
  for (const char* level : {"trace", "debug", "info", "warn", "error", "fatal", "off"}) {
    EXPECT_EQ(MustLoad(std::string("plugins: {log: {level: ") + level + "}}").plugins.log.level,
              level);
  }
}

// ---- Error classes: every message starts with "t.yaml:LINE: ".

TEST(ConfigErrorTest, YamlSyntax) {
  // yaml-cpp notices the unclosed list at the end of the input.
  std::string e = LoadError("server:\n  app: [x\n");
  EXPECT_THAT(e, StartsWith("t.yaml:3: ")) << e;
  EXPECT_THAT(e, HasSubstr("end of sequence flow not found")) << e;

  e = LoadError("server:\n  app: x\n bad: 2\n");
  EXPECT_THAT(e, StartsWith("t.yaml:3: ")) << e;

  e = LoadError("server: *nowhere\n");
  EXPECT_EQ(e, "t.yaml:1: the referenced anchor is not defined");
}

TEST(ConfigErrorTest, UnknownKeys) {
  EXPECT_EQ(LoadError("server: {}\nfoo: 1\n"), "t.yaml:2: unknown key 'foo' at the top level");
  EXPECT_EQ(LoadError(OneService("      prot: 1\n")),
            "t.yaml:5: unknown key 'prot' in server.service[0] (did you mean 'port'?)");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    fiber:\n      - concurency_hint: 2\n"),
            "t.yaml:4: unknown key 'concurency_hint' in global.threadmodel.fiber[0] "
            "(did you mean 'concurrency_hint'?)");
  EXPECT_EQ(LoadError("plugins:\n  log:\n    level: info\n    path: /tmp/x\n"),
            "t.yaml:4: unknown key 'path' in plugins.log");
  EXPECT_EQ(LoadError("plugins:\n  metrics: {}\n"), "t.yaml:2: unknown key 'metrics' in plugins");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                      "      selector: direct\n"),
            "t.yaml:5: unknown key 'selector' in client.service[0]");
  // Unknown keys are reported before missing ones: a misspelt required key names the typo.
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      prt: 1\n"),
            "t.yaml:4: unknown key 'prt' in server.service[0] (did you mean 'port'?)");
}

TEST(ConfigErrorTest, DuplicateKey) {
  EXPECT_EQ(LoadError(OneService("      port: 1\n")),
            "t.yaml:5: duplicate key 'port' in server.service[0] (first on line 4)");
}

TEST(ConfigErrorTest, WrongType) {
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: abc\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got 'abc'");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: true\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got 'true'");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: [1]\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got a list");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port:\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got null");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: 1.5\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got '1.5'");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: 0x10\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got '0x10'");
  EXPECT_EQ(LoadError("server:\n  service: {name: a}\n"),
            "t.yaml:2: server.service: expected a list, got a mapping");
  EXPECT_EQ(LoadError("server:\n  - app\n"), "t.yaml:2: server: expected a mapping, got a list");
  EXPECT_EQ(LoadError("server:\n  service:\n    - just-a-name\n"),
            "t.yaml:3: server.service[0]: expected a mapping, got 'just-a-name'");
  EXPECT_EQ(LoadError("server:\n  app: {a: 1}\n"),
            "t.yaml:2: server.app: expected a string, got a mapping");
  EXPECT_EQ(LoadError("hello\n"), "t.yaml:1: top level: expected a mapping, got 'hello'");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: ''\n      port: 1\n"),
            "t.yaml:3: server.service[0].name: expected a non-empty string, got ''");
  EXPECT_EQ(LoadError("[a]: 1\n"), "t.yaml:1: keys must be strings, got a list at the top level");
}

TEST(ConfigErrorTest, NoSilentWrapOfUnsigned) {
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: -1\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got '-1'");
  EXPECT_EQ(LoadError(OneService("      timeout: -1\n")),
            "t.yaml:5: server.service[0].timeout: expected an integer in 0..4294967295, got '-1'");
  EXPECT_EQ(LoadError(OneService("      timeout: 4294967296\n")),
            "t.yaml:5: server.service[0].timeout: expected an integer in 0..4294967295, "
            "got '4294967296'");
  EXPECT_EQ(LoadError(OneService("      max_pending_write_bytes: 18446744073709551616\n")),
            "t.yaml:5: server.service[0].max_pending_write_bytes: expected an integer in "
            "4096..18446744073709551615, got '18446744073709551616'");
  EXPECT_EQ(LoadError(OneService("      idle_time: false\n")),
            "t.yaml:5: server.service[0].idle_time: expected an integer in 0..4294967295, "
            "got 'false'");
  EXPECT_EQ(LoadError(OneService("      max_conn_num: +5\n")),
            "t.yaml:5: server.service[0].max_conn_num: expected an integer in 1..4294967295, "
            "got '+5'");
}

TEST(ConfigErrorTest, OutOfRange) {
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: 65536\n"),
            "t.yaml:4: server.service[0].port: expected an integer in 0..65535, got '65536'");
  EXPECT_EQ(LoadError("server: {admin_port: 70000}\n"),
            "t.yaml:1: server.admin_port: expected an integer in 0..65535, got '70000'");
  EXPECT_EQ(LoadError(OneService("      max_conn_num: 0\n")),
            "t.yaml:5: server.service[0].max_conn_num: expected an integer in 1..4294967295, "
            "got '0'");
  EXPECT_EQ(LoadError(OneService("      max_packet_size: 15\n")),
            "t.yaml:5: server.service[0].max_packet_size: expected an integer in 16..4294967295, "
            "got '15'");
  EXPECT_EQ(LoadError(OneService("      max_pending_write_bytes: 4095\n")),
            "t.yaml:5: server.service[0].max_pending_write_bytes: expected an integer in "
            "4096..18446744073709551615, got '4095'");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    default:\n      - io_thread_num: 0\n"),
            "t.yaml:4: global.threadmodel.default[0].io_thread_num: expected an integer in "
            "1..1024, got '0'");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    default:\n      - io_thread_num: 1025\n"),
            "t.yaml:4: global.threadmodel.default[0].io_thread_num: expected an integer in "
            "1..1024, got '1025'");
  const std::string fiber = "global:\n  threadmodel:\n    fiber:\n      - ";
  EXPECT_EQ(LoadError(fiber + "concurrency_hint: 1025\n"),
            "t.yaml:4: global.threadmodel.fiber[0].concurrency_hint: expected an integer in "
            "0..1024, got '1025'");
  EXPECT_EQ(LoadError(fiber + "scheduling_group_size: 65\n"),
            "t.yaml:4: global.threadmodel.fiber[0].scheduling_group_size: expected an integer in "
            "0..64, got '65'");
  EXPECT_EQ(LoadError(fiber + "fiber_stack_size: 20000\n"),
            "t.yaml:4: global.threadmodel.fiber[0].fiber_stack_size: expected a multiple of 4096 "
            "in 16384..67108864, got '20000'");
  EXPECT_EQ(LoadError(fiber + "fiber_stack_size: 8192\n"),
            "t.yaml:4: global.threadmodel.fiber[0].fiber_stack_size: expected a multiple of 4096 "
            "in 16384..67108864, got '8192'");
  EXPECT_EQ(LoadError(fiber + "work_stealing_ratio: 0\n"),
            "t.yaml:4: global.threadmodel.fiber[0].work_stealing_ratio: expected an integer in "
            "1..1000000, got '0'");
  EXPECT_EQ(LoadError(fiber + "fiber_run_queue_size: 1000\n"),
            "t.yaml:4: global.threadmodel.fiber[0].fiber_run_queue_size: expected a power of two "
            "in 256..16777216, got '1000'");
  EXPECT_EQ(LoadError(fiber + "fiber_run_queue_size: 128\n"),
            "t.yaml:4: global.threadmodel.fiber[0].fiber_run_queue_size: expected a power of two "
            "in 256..16777216, got '128'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - {name: a, target: '1.2.3.4:5', timeout: 0}\n"),
            "t.yaml:3: client.service[0].timeout: expected an integer in 1..4294967295, got '0'");
  EXPECT_EQ(
      LoadError("client:\n  service:\n    - {name: a, target: '1.2.3.4:5', max_conn_num: 1025}\n"),
      "t.yaml:3: client.service[0].max_conn_num: expected an integer in 0..1024, got '1025'");
  EXPECT_EQ(
      LoadError("client:\n  service:\n    - {name: a, target: '1.2.3.4:5', pipeline_depth: 0}\n"),
      "t.yaml:3: client.service[0].pipeline_depth: expected an integer in 1..1024, got '0'");
  EXPECT_EQ(
      LoadError(
          "client:\n  service:\n    - {name: a, target: '1.2.3.4:5', pipeline_depth: 1025}\n"),
      "t.yaml:3: client.service[0].pipeline_depth: expected an integer in 1..1024, got '1025'");
}

TEST(ConfigErrorTest, BadChoices) {
  EXPECT_EQ(LoadError(OneService("      network: udp\n")),
            "t.yaml:5: server.service[0].network: expected one of tcp, got 'udp'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                      "      conn_type: pooled\n"),
            "t.yaml:5: client.service[0].conn_type: expected one of long|short, got 'pooled'");
  EXPECT_EQ(LoadError("plugins:\n  log: {level: verbose}\n"),
            "t.yaml:2: plugins.log.level: expected one of trace|debug|info|warn|error|fatal|off, "
            "got 'verbose'");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    default:\n"
                      "      - io_handle_type: separate\n"),
            "t.yaml:4: global.threadmodel.default[0].io_handle_type: 'separate' is not supported "
            "yet (only 'merge')");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    default:\n      - io_handle_type: mixed\n"),
            "t.yaml:4: global.threadmodel.default[0].io_handle_type: expected one of merge, "
            "got 'mixed'");
  EXPECT_EQ(LoadError(OneService("      ip: localhost\n")),
            "t.yaml:5: server.service[0].ip: expected a numeric IPv4 or IPv6 address, "
            "got 'localhost'");
  EXPECT_EQ(LoadError("server: {admin_ip: 300.1.1.1}\n"),
            "t.yaml:1: server.admin_ip: expected a numeric IPv4 or IPv6 address, got '300.1.1.1'");
  EXPECT_EQ(LoadError("server:\n  admin_port: 8888\n  admin_allowed_hosts: [a.example, "
                      "\"b.example:80\"]\n"),
            "t.yaml:3: server.admin_allowed_hosts: expected host names (letters, digits, '-' and "
            "'.', without a port) or '*', got 'b.example:80'");
  EXPECT_EQ(LoadError("server:\n  admin_port: 8888\n  admin_allowed_hosts: node-7.internal\n"),
            "t.yaml:3: server.admin_allowed_hosts: expected a list of strings, got "
            "'node-7.internal'");
  EXPECT_EQ(LoadError(OneService("      protocol: ''\n")),
            "t.yaml:5: server.service[0].protocol: expected a non-empty string, got ''");
}

TEST(ConfigTest, OverloadKeys) {
  Config c = MustLoad(OneService("      max_concurrency: 64\n"));
  EXPECT_EQ(c.server.service[0].max_concurrency, 64u);
  EXPECT_FALSE(c.server.service[0].max_concurrency_auto);
  c = MustLoad(OneService("      max_concurrency: auto\n"));
  EXPECT_EQ(c.server.service[0].max_concurrency, 0u);
  EXPECT_TRUE(c.server.service[0].max_concurrency_auto);
  c = MustLoad(OneService(""));
  EXPECT_EQ(c.server.service[0].max_concurrency, 0u);
  EXPECT_FALSE(c.server.service[0].max_concurrency_auto);
  c = MustLoad(
      "client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
      "      overload_throttle: true\n");
  EXPECT_TRUE(c.client.service[0].overload_throttle);
  EXPECT_FALSE(ClientServiceConfig{}.overload_throttle);
}

TEST(ConfigErrorTest, BadOverloadKeys) {
  EXPECT_EQ(LoadError(OneService("      max_concurrency: lots\n")),
            "t.yaml:5: server.service[0].max_concurrency: expected an integer in 0..1048576 or "
            "'auto', got 'lots'");
  EXPECT_EQ(LoadError(OneService("      max_concurrency: 1048577\n")),
            "t.yaml:5: server.service[0].max_concurrency: expected an integer in 0..1048576, "
            "got '1048577'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n      target: 1.2.3.4:5\n"
                      "      overload_throttle: yes\n"),
            "t.yaml:5: client.service[0].overload_throttle: expected one of true|false, got 'yes'");
}

TEST(ConfigErrorTest, BadTargets) {
  auto target_error = [](const std::string& target) {
    return LoadError("client:\n  service:\n    - name: a\n      target: '" + target + "'\n");
  };
  const std::string prefix =
      "t.yaml:4: client.service[0].target: expected ip:port[,ip:port...] (IPv6 as [addr]:port, "
      "port 1..65535), got ";
  EXPECT_EQ(target_error("localhost:80"), prefix + "'localhost:80'");
  EXPECT_EQ(target_error("1.2.3.4"), prefix + "'1.2.3.4'");
  EXPECT_EQ(target_error("1.2.3.4:0"), prefix + "'1.2.3.4:0'");
  EXPECT_EQ(target_error("1.2.3.4:65536"), prefix + "'1.2.3.4:65536'");
  EXPECT_EQ(target_error("::1:80"), prefix + "'::1:80'");
  EXPECT_EQ(target_error("1.2.3.4:80,,1.2.3.5:80"), prefix + "''");
  EXPECT_EQ(target_error(""), prefix + "''");
  EXPECT_EQ(target_error("1.2.3.4:80, [1.2.3.4]:81"), prefix + "'[1.2.3.4]:81'");
}

TEST(ConfigErrorTest, MissingRequiredKey) {
  // The line of the enclosing mapping: the first key of the list entry.
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      ip: 1.2.3.4\n"),
            "t.yaml:3: server.service[0]: missing required key 'port'");
  EXPECT_EQ(LoadError("server:\n  service:\n    - name: a\n      port: 1\n\n    - port: 2\n"),
            "t.yaml:6: server.service[1]: missing required key 'name'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - name: a\n"),
            "t.yaml:3: client.service[0]: missing required key 'target'");
  EXPECT_EQ(LoadError("client:\n  service:\n    - {target: '1.2.3.4:5'}\n"),
            "t.yaml:3: client.service[0]: missing required key 'name'");
}

TEST(ConfigErrorTest, DuplicateNames) {
  EXPECT_EQ(LoadError("server:\n  service:\n    - {name: a, port: 1}\n    - {name: b, port: 2}\n"
                      "    - name: a\n      port: 3\n"),
            "t.yaml:5: server.service[2].name: duplicate service name 'a' (also "
            "server.service[0])");
  EXPECT_EQ(LoadError("client:\n  service:\n    - {name: a, target: '1.2.3.4:5'}\n"
                      "    - {name: a, target: '1.2.3.4:6'}\n"),
            "t.yaml:4: client.service[1].name: duplicate service name 'a' (also "
            "client.service[0])");
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    fiber:\n      - {}\n      - {}\n"),
            "t.yaml:5: global.threadmodel.fiber[1].instance_name: duplicate thread model "
            "instance 'fiber_instance' (also global.threadmodel.fiber[0])");
}

TEST(ConfigErrorTest, UnknownThreadModelInstance) {
  EXPECT_EQ(LoadError(OneService("      threadmodel_instance_name: fiber_instance\n")),
            "t.yaml:5: server.service[0].threadmodel_instance_name: no thread model instance "
            "named 'fiber_instance' (configured: default_instance)");
  // The server section may come before global in the file; the check still holds.
  EXPECT_EQ(
      LoadError("server:\n  service:\n    - {name: a, port: 1, threadmodel_instance_name: x}\n"
                "global:\n  threadmodel:\n    fiber: [{instance_name: f1}, "
                "{instance_name: f2}]\n"),
      "t.yaml:3: server.service[0].threadmodel_instance_name: no thread model instance "
      "named 'x' (configured: f1, f2)");
}

TEST(ConfigErrorTest, BothThreadModels) {
  EXPECT_EQ(LoadError("global:\n  threadmodel:\n    default: [{}]\n    fiber: [{}]\n"),
            "t.yaml:3: global.threadmodel: give either 'default' (merge) or 'fiber' instances, "
            "not both");
}

TEST(ConfigErrorTest, PortCollisions) {
  EXPECT_EQ(LoadError("server:\n  service:\n    - {name: a, port: 80}\n"
                      "    - {name: b, port: 80, ip: 127.0.0.1}\n"),
            "t.yaml:4: server.service[1].port: 127.0.0.1:80 collides with server.service[0] "
            "(0.0.0.0:80)");
  EXPECT_EQ(LoadError("server:\n  admin_port: 8888\n  service:\n"
                      "    - {name: a, port: 8888, ip: 127.0.0.1}\n"),
            "t.yaml:4: server.service[0].port: 127.0.0.1:8888 collides with server.admin_port "
            "(127.0.0.1:8888)");
  // Distinct addresses on one port are fine.
  MustLoad(
      "server:\n  admin_port: 8888\n  service:\n"
      "    - {name: a, port: 8888, ip: 10.0.0.1}\n"
      "    - {name: b, port: 8888, ip: '::1'}\n");
}

TEST(ConfigErrorTest, MultipleDocuments) {
  EXPECT_EQ(LoadError("server: {}\n---\nclient: {}\n"),
            "t.yaml:3: expected one YAML document, found a second one");
}

TEST(ConfigErrorTest, LongValuesAreCut) {
  std::string e = LoadError(OneService("      network: " + std::string(1000, 'x') + "\n"));
  EXPECT_THAT(e, HasSubstr("got '" + std::string(64, 'x') + "...'"));
  EXPECT_LT(e.size(), 200u);
}

TEST(ConfigErrorTest, FirstErrorWins) {
  // Two problems: only the first one found is reported (keys are read in schema order, and
  // idle_time comes before timeout there).
  EXPECT_EQ(LoadError(OneService("      timeout: x\n      idle_time: y\n")),
            "t.yaml:6: server.service[0].idle_time: expected an integer in 0..4294967295, got 'y'");
}

TEST(ConfigErrorTest, OutputUntouchedOnFailure) {
  Config config;
  config.server.app = "keep";
  std::string error;
  EXPECT_FALSE(LoadConfigFromString("server: {app: new, bogus: 1}\n", "t.yaml", &config, &error));
  EXPECT_EQ(config.server.app, "keep");
  // A null error pointer is allowed.
  EXPECT_FALSE(LoadConfigFromString("bogus: 1\n", "t.yaml", &config, nullptr));
}

// Every ```yaml block of docs/config.md: the one of "Ports for scripts and tests" and the full
// example load, and so does the merge variant spliced into the latter.
std::vector<std::string> DocYamlBlocks() {
  std::ifstream in(std::string(TRPC_SOURCE_DIR) + "/docs/config.md");
  std::vector<std::string> blocks;
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```yaml") {
      inside = true;
      blocks.emplace_back();
    } else if (inside && line == "```") {
      inside = false;
    } else if (inside) {
      blocks.back() += line + "\n";
    }
  }
  return blocks;
}

TEST(ConfigDocsTest, ExamplesLoad) {
  std::vector<std::string> blocks = DocYamlBlocks();
  ASSERT_EQ(blocks.size(), 3u);
  Config ports = MustLoad(blocks[0]);
  EXPECT_TRUE(ports.server.admin_port_auto);
  EXPECT_EQ(ports.server.listen_file, "run/listen.txt");
  EXPECT_EQ(ports.server.service.at(0).port, 0);
  blocks.erase(blocks.begin());
  Config fiber = MustLoad(blocks[0]);
  ASSERT_EQ(fiber.global.threadmodel.fiber.size(), 1u);
  EXPECT_EQ(fiber.global.threadmodel.fiber[0].concurrency_hint, 2u);
  EXPECT_EQ(fiber.server.service.at(0).threadmodel_instance_name, "fiber_instance");
  EXPECT_EQ(fiber.client.service.at(0).target, "127.0.0.1:12345,[::1]:12345");

  std::string merge = blocks[1] + blocks[0].substr(blocks[0].find("server:"));
  size_t at = merge.find("threadmodel_instance_name: fiber_instance");
  ASSERT_NE(at, std::string::npos);
  merge.replace(at, std::string("threadmodel_instance_name: fiber_instance").size(),
                "threadmodel_instance_name: default_instance");
  Config merged = MustLoad(merge);
  ASSERT_EQ(merged.global.threadmodel.merge.size(), 1u);
  EXPECT_EQ(merged.global.threadmodel.merge[0].io_thread_num, 4u);
  EXPECT_TRUE(merged.global.threadmodel.fiber.empty());
}

// ---- Files.

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tmp = std::getenv("TMPDIR");
    dir_ = std::string(tmp != nullptr ? tmp : "/tmp") + "/config_test_XXXXXX";
    ASSERT_NE(mkdtemp(dir_.data()), nullptr);
  }
  void TearDown() override {
    for (const std::string& f : files_) std::remove(f.c_str());
    rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(ConfigFileTest, LoadsFile) {
  std::string path = Write("trpc.yaml", kDesignExampleFiber);
  Config config;
  std::string error;
  ASSERT_TRUE(LoadConfig(path, &config, &error)) << error;
  EXPECT_EQ(config.path, path);
  EXPECT_EQ(config.server.service.at(0).origin, path + ":14");
  Config from_string;
  ASSERT_TRUE(LoadConfigFromString(kDesignExampleFiber, path, &from_string, &error));
  EXPECT_EQ(config, from_string);
}

TEST_F(ConfigFileTest, ErrorsNameTheFile) {
  std::string path = Write("bad.yaml", "server:\n  service:\n    - name: a\n      port: abc\n");
  Config config;
  std::string error;
  EXPECT_FALSE(LoadConfig(path, &config, &error));
  EXPECT_EQ(error, path + ":4: server.service[0].port: expected an integer in 0..65535, got 'abc'");
}

TEST_F(ConfigFileTest, UnreadableFile) {
  Config config;
  std::string error;
  std::string missing = dir_ + "/missing.yaml";
  EXPECT_FALSE(LoadConfig(missing, &config, &error));
  EXPECT_EQ(error, missing + ": cannot open: No such file or directory");

  EXPECT_FALSE(LoadConfig(dir_, &config, &error));
  EXPECT_EQ(error, dir_ + ": cannot read: Is a directory");
}

}  // namespace
}  // namespace trpc

namespace trpc {
namespace {

TEST(ConfigTest, FilterLists) {
  Config c = MustLoad(
      "server:\n  filter: [a, b]\n  stop_max_wait_time: 500\n  service:\n    - name: s\n"
      "      port: 1\n      filter:\n        - c\nclient:\n  filter: [x]\n  service:\n"
      "    - {name: n, target: '1.2.3.4:5', filter: [y, z]}\n");
  EXPECT_EQ(c.server.filter, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.server.filter_origin, "t.yaml:2");
  EXPECT_EQ(c.server.stop_max_wait_time, 500u);
  EXPECT_EQ(c.server.service[0].filter, (std::vector<std::string>{"c"}));
  EXPECT_EQ(c.client.filter, (std::vector<std::string>{"x"}));
  EXPECT_EQ(c.client.filter_origin, "t.yaml:10");
  EXPECT_EQ(c.client.service[0].filter, (std::vector<std::string>{"y", "z"}));
  EXPECT_EQ(Config{}.server.stop_max_wait_time, 3000u);
}

TEST(ConfigErrorTest, BadFilterLists) {
  EXPECT_EQ(LoadError("server:\n  filter: auth\n"),
            "t.yaml:2: server.filter: expected a list of strings, got 'auth'");
  EXPECT_EQ(LoadError("server:\n  filter:\n    - auth\n    - {a: 1}\n"),
            "t.yaml:4: server.filter[1]: expected a non-empty string, got a mapping");
  EXPECT_EQ(LoadError("server:\n  filter:\n    - auth\n    - auth\n"),
            "t.yaml:4: server.filter[1]: 'auth' is listed twice");
  EXPECT_EQ(LoadError(OneService("      filter: ['']\n")),
            "t.yaml:5: server.service[0].filter[0]: expected a non-empty string, got ''");
  EXPECT_EQ(
      LoadError("client:\n  service:\n    - {name: a, target: '1.2.3.4:5', filter: {x: 1}}\n"),
      "t.yaml:3: client.service[0].filter: expected a list of strings, got a mapping");
  EXPECT_EQ(LoadError("server: {stop_max_wait_time: 600001}\n"),
            "t.yaml:1: server.stop_max_wait_time: expected an integer in 0..600000, got '600001'");
}

TEST(ConfigTest, ReadFrameTimeout) {
  auto timeout_of = [](const std::string& value) {
    return MustLoad(OneService("      read_frame_timeout: " + value + "\n"))
        .server.service.at(0)
        .read_frame_timeout;
  };
  EXPECT_EQ(ServiceConfig{}.read_frame_timeout, 10000u);
  EXPECT_EQ(MustLoad(OneService("")).server.service.at(0).read_frame_timeout, 10000u);
  EXPECT_EQ(timeout_of("0"), 0u);
  EXPECT_EQ(timeout_of("4294967295"), 4294967295u);
  for (std::string bad : {"4294967296", "1s", "-1"}) {
    EXPECT_EQ(LoadError(OneService("      read_frame_timeout: " + bad + "\n")),
              "t.yaml:5: server.service[0].read_frame_timeout: expected an integer in "
              "0..4294967295, got '" +
                  bad + "'");
  }
  EXPECT_EQ(LoadError(OneService("      read_frame_timout: 300\n")),
            "t.yaml:5: unknown key 'read_frame_timout' in server.service[0] (did you mean "
            "'read_frame_timeout'?)");
}

TEST(ConfigTest, StreamKeys) {
  const ServiceConfig defaults = MustLoad(OneService("")).server.service.at(0);
  EXPECT_EQ(defaults.max_streams_per_connection, 1000u);
  EXPECT_EQ(defaults.stream_window, 65535u);
  const ServiceConfig set =
      MustLoad(OneService("      max_streams_per_connection: 8\n      stream_window: 1048576\n"))
          .server.service.at(0);
  EXPECT_EQ(set.max_streams_per_connection, 8u);
  EXPECT_EQ(set.stream_window, 1048576u);
  EXPECT_EQ(LoadError(OneService("      max_streams_per_connection: 0\n")),
            "t.yaml:5: server.service[0].max_streams_per_connection: expected an integer in "
            "1..1000000, got '0'");
  EXPECT_EQ(LoadError(OneService("      stream_window: 1024\n")),
            "t.yaml:5: server.service[0].stream_window: expected an integer in "
            "65535..2147483647, got '1024'");
}

// A server section must configure something to serve; a program that serves nothing leaves it
// out (or empty), and one that serves only the admin service sets admin_port.
TEST(ConfigErrorTest, ServerSectionWithoutServices) {
  const std::string hint =
      "no service configured: list them under 'service' (or leave the section out in a program "
      "that serves nothing)";
  EXPECT_EQ(LoadError("client:\n  service:\nserver:\n  app: a\n  server: s\n"),
            "t.yaml:4: server: " + hint);
  EXPECT_EQ(LoadError("server:\n  app: a\n  service: []\n"), "t.yaml:2: server: " + hint);
  EXPECT_EQ(LoadError("server:\n  service:\n"), "t.yaml:2: server: " + hint);
  EXPECT_EQ(LoadError("server: {stop_max_wait_time: 10}\n"), "t.yaml:1: server: " + hint);
  EXPECT_TRUE(MustLoad("server:\n").server.service.empty());
  EXPECT_TRUE(MustLoad("server: {}\n").server.service.empty());
  Config admin_only = MustLoad("server:\n  admin_port: 8080\n");
  EXPECT_EQ(admin_only.server.admin_port, 8080);
  EXPECT_EQ(admin_only.server.origin, "t.yaml:2");
  EXPECT_EQ(MustLoad(OneService("")).server.origin, "t.yaml:2");
  EXPECT_EQ(MustLoad("client:\n  service:\n").server.origin, "");
}

TEST(ConfigTest, BufferBound) {
  Config c = MustLoad(
      "server:\n  max_buffered_bytes: 33554432\n  buffered_bytes_timeout: 250\n  service:\n"
      "    - {name: s, port: 1}\n");
  EXPECT_EQ(c.server.max_buffered_bytes, 33554432u);
  EXPECT_EQ(c.server.buffered_bytes_timeout, 250u);
  EXPECT_EQ(Config{}.server.max_buffered_bytes, 0u);  // automatic: sized for the machine
  EXPECT_EQ(Config{}.server.buffered_bytes_timeout, 10000u);
  EXPECT_EQ(MustLoad("server: {max_buffered_bytes: 1048576, admin_port: 8080}\n")
                .server.max_buffered_bytes,
            1048576u);
}

TEST(ConfigErrorTest, BadBufferBound) {
  EXPECT_EQ(LoadError("server:\n  max_buffered_bytes: 1048575\n"),
            "t.yaml:2: server.max_buffered_bytes: expected 0 (automatic) or at least 1048576 "
            "bytes, got 1048575");
  EXPECT_EQ(LoadError("server:\n  max_buffered_bytes: -1\n"),
            "t.yaml:2: server.max_buffered_bytes: expected an integer in "
            "0..18446744073709551615, got '-1'");
  EXPECT_EQ(LoadError("server:\n  buffered_bytes_timeout: 0\n"),
            "t.yaml:2: server.buffered_bytes_timeout: expected an integer in 1..4294967295, got "
            "'0'");
}

TEST(ConfigTest, ClientBufferBound) {
  Config c = MustLoad("client:\n  max_buffered_bytes: 2097152\n  buffered_bytes_timeout: 500\n");
  EXPECT_EQ(c.client.max_buffered_bytes, 2097152u);
  EXPECT_EQ(c.client.buffered_bytes_timeout, 500u);
  EXPECT_EQ(Config{}.client.max_buffered_bytes, 0u);
  EXPECT_EQ(LoadError("client:\n  max_buffered_bytes: 1000\n"),
            "t.yaml:2: client.max_buffered_bytes: expected 0 (automatic) or at least 1048576 "
            "bytes, got 1000");
}

TEST(ConfigTest, ParkedBound) {
  EXPECT_EQ(Config{}.server.max_parked_requests, 0u);  // automatic
  EXPECT_EQ(MustLoad("server:\n  max_parked_requests: 5000\n  service:\n    - {name: s, port: 1}\n")
                .server.max_parked_requests,
            5000u);
  EXPECT_EQ(LoadError("server:\n  max_parked_requests: -3\n"),
            "t.yaml:2: server.max_parked_requests: expected an integer in 0..4294967295, got "
            "'-3'");
}

// server.admin_port: a port, 0 (none) or `auto` (a port the kernel picks).
TEST(ConfigTest, AdminPortAuto) {
  Config c = MustLoad("server:\n  admin_port: auto\n");
  EXPECT_TRUE(c.server.admin_port_auto);
  EXPECT_EQ(c.server.admin_port, 0);
  EXPECT_TRUE(c.server.admin_enabled());  // counts as something to serve
  c = MustLoad("server: {admin_port: 'auto'}\n");
  EXPECT_TRUE(c.server.admin_port_auto);
  c = MustLoad("server:\n  admin_port: 8080\n");
  EXPECT_FALSE(c.server.admin_port_auto);
  EXPECT_EQ(c.server.admin_port, 8080);
  EXPECT_TRUE(c.server.admin_enabled());
  c = MustLoad(OneService("").replace(0, 8, "server:\n  admin_port: 0\n"));
  EXPECT_FALSE(c.server.admin_enabled());
  // An automatic port never collides with a service's, even one on port 0.
  c = MustLoad(
      "server:\n  admin_port: auto\n  service:\n    - {name: a, ip: 127.0.0.1, port: 0}\n");
  EXPECT_TRUE(c.server.admin_port_auto);
}

TEST(ConfigErrorTest, BadAdminPort) {
  EXPECT_EQ(LoadError("server:\n  admin_port: automatic\n"),
            "t.yaml:2: server.admin_port: expected an integer in 0..65535 or 'auto', got "
            "'automatic'");
  EXPECT_EQ(LoadError("server:\n  admin_port: -1\n"),
            "t.yaml:2: server.admin_port: expected an integer in 0..65535 or 'auto', got '-1'");
  EXPECT_EQ(LoadError("server:\n  admin_port: 65536\n"),
            "t.yaml:2: server.admin_port: expected an integer in 0..65535, got '65536'");
  EXPECT_EQ(LoadError("server:\n  admin_port: [auto]\n"),
            "t.yaml:2: server.admin_port: expected a string, got a list");
}

TEST(ConfigTest, ListenFile) {
  Config c = MustLoad(OneService("").replace(0, 8, "server:\n  listen_file: run/listen.txt\n"));
  EXPECT_EQ(c.server.listen_file, "run/listen.txt");
  EXPECT_EQ(c.server.listen_file_origin, "t.yaml:2");
  c = MustLoad("server:\n  admin_port: auto\n  listen_file: '/tmp/a b/listen'\n");
  EXPECT_EQ(c.server.listen_file, "/tmp/a b/listen");
  EXPECT_EQ(c.server.listen_file_origin, "t.yaml:3");
  c = MustLoad(OneService("").replace(0, 8, "server:\n  listen_file: ''\n"));  // none
  EXPECT_EQ(c.server.listen_file, "");
  EXPECT_EQ(c.server.listen_file_origin, "");
}

TEST(ConfigErrorTest, BadListenFile) {
  EXPECT_EQ(LoadError("server:\n  admin_port: auto\n  listen_file: /tmp/\n"),
            "t.yaml:3: server.listen_file: expected a file path, got a directory '/tmp/'");
  EXPECT_EQ(LoadError("server:\n  admin_port: auto\n  listen_file: \"a\\nb\"\n"),
            "t.yaml:3: server.listen_file: expected a file path, got one with control "
            "characters");
  EXPECT_EQ(LoadError("server:\n  admin_port: auto\n  listen_file: {a: 1}\n"),
            "t.yaml:3: server.listen_file: expected a string, got a mapping");
  EXPECT_EQ(LoadError("server:\n  admin_port: auto\n  listen_fle: x\n"),
            "t.yaml:3: unknown key 'listen_fle' in server (did you mean 'listen_file'?)");
  // A listen file alone serves nothing.
  EXPECT_THAT(LoadError("server:\n  listen_file: x\n"),
              StartsWith("t.yaml:2: server: no service configured"));
}

}  // namespace
}  // namespace trpc
