#pragma once

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace trpc::admin {

/// The admin service's bearer token (server.admin_token or server.admin_token_file,
/// docs/admin.md). A token file is read at start-up and again whenever its size or
/// modification time changes, so a token rotates by rewriting the file (atomically, by
/// rename); a new file that cannot be read or holds no valid token keeps the previous token,
/// and is logged once per change.
///
/// Thread contract: Accept() from any thread (the admin thread); the file check and the swap
/// are under a mutex, the admin answers a few requests a second.
class AdminToken {
 public:
  /// From a literal token (already checked by the config loader).
  explicit AdminToken(std::string token);
  /// From a file; false with "origin: server.admin_token_file: why" in *err when it cannot be
  /// read or holds no valid token (one line; surrounding white space is dropped).
  static std::unique_ptr<AdminToken> FromFile(const std::string& path, const std::string& origin,
                                              std::string* err);

  /// Whether `presented` is the token. Compares SHA-256 digests in constant time, so neither
  /// the token's bytes nor its length leak through timing.
  bool Accept(std::string_view presented);
  /// Requests refused for a missing or wrong token.
  uint64_t failures() const { return failures_.load(std::memory_order_relaxed); }

 private:
  AdminToken() = default;
  // Re-reads the file when it changed; holds mu_.
  void RefreshLocked();
  static bool ReadTokenFile(const std::string& path, std::string* token, std::string* why);

  std::mutex mu_;
  unsigned char digest_[32] = {};
  std::string path_;  // "" for a literal token
  struct stat seen_ {};
  std::atomic<uint64_t> failures_{0};
};

}  // namespace trpc::admin
