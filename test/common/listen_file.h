#pragma once

// Reading a server's listen file (server.listen_file, docs/config.md): what a test learns the
// ports of a server started with port 0 and `admin_port: auto` from.

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace trpc::testing {

/// The lines of the listen file at `path` as (name, "ip:port") in file order; empty if it is
/// not there.
inline std::vector<std::pair<std::string, std::string>> ReadListenFile(const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    size_t space = line.find(' ');
    if (space == std::string::npos) continue;
    out.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  return out;
}

/// The address the listen file at `path` gives for `name` ("admin" for the admin service);
/// "" if the file or the line is not there.
inline std::string ListenAddress(const std::string& path, const std::string& name) {
  for (auto& [n, addr] : ReadListenFile(path)) {
    if (n == name) return addr;
  }
  return "";
}

}  // namespace trpc::testing
