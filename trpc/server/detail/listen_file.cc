#include "trpc/server/detail/listen_file.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

namespace trpc::detail {

namespace {
std::string Reason(int err) { return std::generic_category().message(err); }
}  // namespace

std::string FormatListenFile(const Listeners& listeners) {
  std::string text;
  for (const auto& [name, addr] : listeners) text += name + " " + addr.ToString() + "\n";
  return text;
}

bool WriteListenFile(const std::string& path, std::string_view text, std::string* err) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *err = "cannot write '" + tmp + "': " + Reason(errno);
    return false;
  }
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = "cannot write '" + tmp + "': " + Reason(n < 0 ? errno : ENOSPC);
      ::close(fd);
      ::unlink(tmp.c_str());
      return false;
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    *err = "cannot write '" + tmp + "': " + Reason(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *err = "cannot rename '" + tmp + "' to '" + path + "': " + Reason(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

bool RemoveListenFile(const std::string& path, std::string* err) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return true;
  *err = "cannot remove '" + path + "': " + Reason(errno);
  return false;
}

}  // namespace trpc::detail
