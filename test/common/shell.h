#pragma once

// Running an outside program from a test and reading what it printed.

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace trpc::testing {

/// Runs `cmd` with /bin/sh, appending its stdout and stderr to `*output`. Returns its exit status,
/// 128 + the signal if a signal ended it, or -1 if it could not be started. Bound its run time in
/// `cmd` itself (`timeout 60 ...`) when it talks to a server.
inline int RunShell(const std::string& cmd, std::string* output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  int st = pclose(p);
  if (st == -1) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace trpc::testing
