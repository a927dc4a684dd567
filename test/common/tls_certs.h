#pragma once

// Test certificates, made with OpenSSL's API in a fresh temporary folder: a CA, a server
// certificate for localhost / 127.0.0.1 / ::1, a client certificate (CN=alice, with a SPIFFE
// URI), and the bad ones the tests need (another CA's client, an expired server certificate, a
// key that matches nothing). ECDSA P-256, so making them takes milliseconds.

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

namespace trpc::testing {

class TestCerts {
 public:
  /// Writes every file; dir() is removed again by the destructor.
  TestCerts() {
    char tmpl[] = "/tmp/trpc_tls_XXXXXX";
    dir_ = mkdtemp(tmpl);
    EVP_PKEY* ca_key = NewKey();
    X509* ca = Make("trpc test CA", {}, ca_key, nullptr, ca_key, 0, 3650, true);
    Write("ca", ca, ca_key);
    EVP_PKEY* server_key = NewKey();
    X509* server = Make("localhost", {"DNS:localhost", "IP:127.0.0.1", "IP:::1"}, server_key, ca,
                        ca_key, 0, 365, false);
    Write("server", server, server_key);
    EVP_PKEY* client_key = NewKey();
    X509* client = Make("alice", {"URI:spiffe://test/alice", "DNS:alice.test"}, client_key, ca,
                        ca_key, 0, 365, false);
    Write("client", client, client_key);
    X509* bob = Make("bob", {"URI:spiffe://test/bob"}, client_key, ca, ca_key, 0, 365, false);
    Write("bob", bob, client_key);
    // Another CA, and a client certificate from it.
    EVP_PKEY* other_key = NewKey();
    X509* other = Make("someone else's CA", {}, other_key, nullptr, other_key, 0, 3650, true);
    Write("other_ca", other, other_key);
    X509* stranger =
        Make("mallory", {"DNS:mallory.test"}, client_key, other, other_key, 0, 365, false);
    Write("stranger", stranger, client_key);
    // Expired yesterday; and a server certificate for another name.
    X509* expired = Make("localhost", {"DNS:localhost", "IP:127.0.0.1"}, server_key, ca, ca_key,
                         -30, -1, false);
    Write("expired", expired, server_key);
    X509* elsewhere =
        Make("elsewhere.test", {"DNS:elsewhere.test"}, server_key, ca, ca_key, 0, 365, false);
    Write("elsewhere", elsewhere, server_key);
    // A key that belongs to no certificate here.
    EVP_PKEY* lone = NewKey();
    WriteKey("lone.key", lone);
    for (X509* c : {ca, server, client, bob, other, stranger, expired, elsewhere}) X509_free(c);
    for (EVP_PKEY* k : {ca_key, server_key, client_key, other_key, lone}) EVP_PKEY_free(k);
  }
  ~TestCerts() {
    std::string cmd = "rm -rf '" + dir_ + "'";
    if (system(cmd.c_str()) != 0) {
      // (best effort: a temporary folder)
    }
  }
  TestCerts(const TestCerts&) = delete;
  TestCerts& operator=(const TestCerts&) = delete;

  const std::string& dir() const { return dir_; }
  /// "<dir>/<name>.pem" and "<dir>/<name>.key" for ca, server, client (alice), bob, other_ca,
  /// stranger,
  /// expired, elsewhere; "<dir>/lone.key".
  std::string Pem(const std::string& name) const { return dir_ + "/" + name + ".pem"; }
  std::string Key(const std::string& name) const { return dir_ + "/" + name + ".key"; }

 private:
  static EVP_PKEY* NewKey() { return EVP_EC_gen("P-256"); }

  static X509* Make(const std::string& cn, const std::vector<std::string>& sans, EVP_PKEY* key,
                    X509* issuer, EVP_PKEY* issuer_key, long from_days, long to_days, bool ca) {
    static long serial = 1;
    X509* x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
    X509_gmtime_adj(X509_getm_notBefore(x), from_days * 86400 - 60);
    X509_gmtime_adj(X509_getm_notAfter(x), to_days * 86400);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(x, issuer != nullptr ? X509_get_subject_name(issuer) : name);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
    auto add = [&](int nid, const std::string& value) {
      X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
      X509_add_ext(x, ext, -1);
      X509_EXTENSION_free(ext);
    };
    add(NID_basic_constraints, ca ? "critical,CA:TRUE" : "CA:FALSE");
    add(NID_subject_key_identifier, "hash");
    if (ca) add(NID_key_usage, "critical,keyCertSign,cRLSign");
    if (!sans.empty()) {
      std::string list;
      for (const auto& s : sans) list += (list.empty() ? "" : ",") + s;
      add(NID_subject_alt_name, list);
    }
    X509_sign(x, issuer_key, EVP_sha256());
    return x;
  }

  void Write(const std::string& name, X509* cert, EVP_PKEY* key) {
    FILE* f = fopen(Pem(name).c_str(), "w");
    PEM_write_X509(f, cert);
    fclose(f);
    WriteKey(name + ".key", key);
  }
  void WriteKey(const std::string& file, EVP_PKEY* key) {
    FILE* f = fopen((dir_ + "/" + file).c_str(), "w");
    PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr);
    fclose(f);
  }

  std::string dir_;
};

}  // namespace trpc::testing
