#pragma once

// A whole file's bytes, for the interop peers' TLS flags (certificates, keys, CAs).

#include <cstdio>
#include <string>

namespace trpc::test::interop {

/// True with the file's bytes in `*out`; false when it cannot be opened.
inline bool ReadWholeFile(const std::string& path, std::string* out) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  out->clear();
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  std::fclose(f);
  return true;
}

}  // namespace trpc::test::interop
