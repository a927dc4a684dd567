#include "trpc/admin/detail/admin_token.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "trpc/base/logging.h"
#include "trpc/server/server_config.h"

namespace trpc::admin {

namespace {

void Digest(std::string_view s, unsigned char out[32]) {
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), out);
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_ino == b.st_ino && a.st_dev == b.st_dev && a.st_size == b.st_size &&
         a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec;
}

}  // namespace

AdminToken::AdminToken(std::string token) { Digest(token, digest_); }

bool AdminToken::ReadTokenFile(const std::string& path, std::string* token, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = fmt::format("cannot read '{}': {}", path, std::strerror(errno));
    return false;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const size_t b = s.find_first_not_of(" \t\r\n");
  const size_t e = s.find_last_not_of(" \t\r\n");
  s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
  if (std::string problem = AdminTokenProblem(s); !problem.empty()) {
    *why = fmt::format("'{}': {}", path, problem);
    return false;
  }
  *token = std::move(s);
  return true;
}

std::unique_ptr<AdminToken> AdminToken::FromFile(const std::string& path, const std::string& origin,
                                                 std::string* err) {
  std::unique_ptr<AdminToken> t(new AdminToken());
  t->path_ = path;
  ::stat(path.c_str(), &t->seen_);  // before reading: a change in between is read again
  std::string token, why;
  if (!ReadTokenFile(path, &token, &why)) {
    *err = fmt::format("{}{}server.admin_token_file: {}", origin, origin.empty() ? "" : ": ", why);
    return nullptr;
  }
  Digest(token, t->digest_);
  OPENSSL_cleanse(token.data(), token.size());
  return t;
}

void AdminToken::RefreshLocked() {
  struct stat now {};
  if (::stat(path_.c_str(), &now) != 0) {
    if (seen_.st_ino != 0) {
      TRPC_LOG_ERROR("admin: token file '{}' is gone ({}); the previous token stays", path_,
                     std::strerror(errno));
    }
    seen_ = {};
    return;
  }
  if (SameFile(now, seen_)) return;
  seen_ = now;
  std::string token, why;
  if (!ReadTokenFile(path_, &token, &why)) {
    TRPC_LOG_ERROR("admin: token file changed but is refused, the previous token stays: {}", why);
    return;
  }
  Digest(token, digest_);
  OPENSSL_cleanse(token.data(), token.size());
  TRPC_LOG_INFO("admin: token file '{}' reloaded", path_);
}

bool AdminToken::Accept(std::string_view presented) {
  unsigned char got[32];
  Digest(presented, got);
  bool ok;
  {
    std::lock_guard lock(mu_);
    if (!path_.empty()) RefreshLocked();
    ok = !presented.empty() && CRYPTO_memcmp(got, digest_, sizeof got) == 0;
  }
  if (!ok) failures_.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace trpc::admin
