#pragma once

// ChildServer: runs a server binary as a child process for a test.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace trpc::test {

// A server binary run as a child process. Start() waits for its "... ready on IP:PORT" line on
// stdout (the servers bind port 0 and say which port they got, so nothing races for a port);
// the destructor stops it with SIGTERM (SIGKILL if it does not exit within 10 s).
class ChildServer {
 public:
  ChildServer() = default;
  ChildServer(const ChildServer&) = delete;
  ChildServer& operator=(const ChildServer&) = delete;
  ~ChildServer() { Stop(); }

  // RLIMIT_NOFILE of the child (soft and hard), applied before it execs; 0 = inherit.
  void set_nofile_limit(rlim_t n) { nofile_limit_ = n; }
  // Exit statuses Stop() accepts besides 0 and death by SIGTERM.
  void set_accept_any_exit(bool any) { accept_any_exit_ = any; }

  // Returns the "IP:PORT" the server listens on, or "" (with a test failure) if it did not start.
  std::string Start(std::vector<std::string> args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe2 failed";
      return "";
    }
    // argv is built before fork(): the child of a threaded process may only call
    // async-signal-safe functions until it execs.
    name_ = args[0];
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    rlimit nofile{nofile_limit_, nofile_limit_};
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive a crashed test
      dup2(out[1], STDOUT_FILENO);
      if (nofile_limit_ != 0) setrlimit(RLIMIT_NOFILE, &nofile);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string line;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (line.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      ssize_t n = read(out[0], buf, sizeof(buf));
      if (n <= 0) break;  // the child exited before saying it was ready
      line.append(buf, n);
    }
    close(out[0]);
    size_t at = line.find(" ready on ");
    size_t end = line.find('\n');
    if (at == std::string::npos || end == std::string::npos) {
      ADD_FAILURE() << args[0] << " did not start; its stdout: '" << line << "'";
      return "";
    }
    return line.substr(at + 10, end - at - 10);
  }

  // Starts a server that prints no ready line (a peer's own binary), its output going to the
  // test's; the caller waits for it to listen. False (with a test failure) if fork failed.
  bool StartQuiet(std::vector<std::string> args) {
    name_ = args[0];
    std::vector<char*> argv;  // built before fork(), as in Start()
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid_ < 0) ADD_FAILURE() << "fork failed";
    return pid_ > 0;
  }

  pid_t pid() const { return pid_; }

  void Signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
  }

  // Waits up to `timeout_ms` for the child to exit. True (and the wait status in `*status`) if
  // it did; the child is then gone and Stop() does nothing.
  bool WaitExit(int timeout_ms, int* status) {
    if (pid_ <= 0) return false;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      pid_t done = waitpid(pid_, status, WNOHANG);
      if (done == pid_) {
        pid_ = -1;
        return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      usleep(1000);
    }
  }

  // Stops the server; it must end by exiting 0 or by the SIGTERM itself (a sanitizer report at
  // exit makes it exit non-zero, and fails the test here).
  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    int status = 0;
    if (!WaitExit(10'000, &status)) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      pid_ = -1;
      ADD_FAILURE() << name_ << " did not stop within 10 s of SIGTERM";
    } else if (!accept_any_exit_ &&
               (WIFEXITED(status) ? WEXITSTATUS(status) != 0 : WTERMSIG(status) != SIGTERM)) {
      ADD_FAILURE() << name_ << " ended badly: wait status " << status;
    }
  }

 private:
  pid_t pid_ = -1;
  std::string name_;
  rlim_t nofile_limit_ = 0;
  bool accept_any_exit_ = false;
};

}  // namespace trpc::test
