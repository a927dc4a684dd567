#include "trpc/server/server_config.h"

#include <fmt/format.h>

namespace trpc {

std::string AdminTokenProblem(std::string_view token) {
  // RFC 6750's b64token characters, so that the token travels in a header unquoted; and long
  // enough that guessing it over the network is hopeless.
  constexpr size_t kMinLength = 16;
  if (token.size() < kMinLength) {
    return fmt::format("expected a token of at least {} characters, got {}", kMinLength,
                       token.size());
  }
  for (char c : token) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' ||
                    c == '=';
    if (!ok) {
      return "expected a token of letters, digits and -._~+/= (a bearer token's characters)";
    }
  }
  return {};
}

std::string AdminUnauthenticatedRefusal(std::string_view ip) {
  return fmt::format(
      "the admin service on {} would be reachable beyond loopback with no authentication "
      "(anyone reaching it could read metrics, change the log level and take CPU profiles): "
      "set server.admin_ssl (with mutual_auth to check clients), server.admin_token or "
      "server.admin_token_file, or say server.admin_allow_unauthenticated: true",
      ip);
}

}  // namespace trpc
