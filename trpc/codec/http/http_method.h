#pragma once

#include <cstdint>

namespace trpc::http {

/// The request methods the HTTP plug-in knows: the parser's result and HttpRequest's method.
enum class HttpMethod : uint8_t {
  kGet,
  kHead,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kOptions,
  kTrace,
  kConnect
};

}  // namespace trpc::http
