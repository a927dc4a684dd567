// raw_http_server [--port P] [--threads N] [--body STR]: the physical limit of this machine's
// syscall path for HTTP/1.1 keep-alive requests answered with a fixed reply. Plain Linux and the
// request framing by hand, nothing of the framework: each of N threads (default 1) owns a
// SO_REUSEPORT listener on 127.0.0.1:P (default 8080; 0 picks a free port) and one
// level-triggered epoll. Per readable connection it reads until EAGAIN, counts the complete
// requests in what it has (pipelined ones included), and writes that many copies of one canned
// reply with one write(). Prints "raw_http_server ready on 127.0.0.1:PORT".
//
// Unlike raw_echo_server it reads and writes through per-thread scratch buffers and keeps only
// an incomplete request or an unwritten reply per connection, so that an idle keep-alive
// connection costs about a hundred bytes of its memory (the C10K figure of http_bench.sh).
//
// The reply (body from --body, default {}):
//   HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}
//
// A request ends after its head ("\r\n\r\n") plus its Content-Length body. Keep-alive always,
// except that `Connection: close` (or HTTP/1.0 without `Connection: keep-alive`) closes the
// connection after that request's reply. Chunked bodies, a head above 16 KiB, a request above
// 1 MiB, or a request line or header that does not parse are answered by closing (after the
// replies to the complete requests before it): a baseline answers the benchmark's requests, not
// every client's.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Stop reading and answer once this much is buffered, so a flood cannot grow the buffers
// without bound (level-triggered epoll brings us back for the rest).
constexpr size_t kMaxBatch = 1024 * 1024;
constexpr size_t kMaxHead = 16 * 1024;     // request line + headers + the blank line
constexpr size_t kMaxRequest = kMaxBatch;  // head + body

// Case-insensitive: does s hold token t as a comma-separated element (Connection: a, close)?
bool HasToken(std::string_view s, std::string_view t) {
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view e = s.substr(0, comma);
    while (!e.empty() && (e.front() == ' ' || e.front() == '\t')) e.remove_prefix(1);
    while (!e.empty() && (e.back() == ' ' || e.back() == '\t')) e.remove_suffix(1);
    if (e.size() == t.size() && strncasecmp(e.data(), t.data(), t.size()) == 0) return true;
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return false;
}

bool IsTokenChar(char c) {
  return c > ' ' && c < 0x7f && std::strchr("\"(),/:;<=>?@[\\]{}", c) == nullptr;
}

// What the server needs of one request head.
struct Head {
  size_t content_length = 0;
  bool close = false;  // close the connection after the reply
};

// Parses "METHOD SP target SP HTTP/1.x CRLF (name: value CRLF)*" (head without the final CRLF).
// False when it is not HTTP/1.x as we serve it.
bool ParseHead(std::string_view head, Head* h) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  size_t sp1 = line.find(' ');
  size_t sp2 = line.rfind(' ');
  if (sp1 == 0 || sp1 == std::string_view::npos || sp2 <= sp1 + 1) return false;
  for (size_t i = 0; i < sp1; ++i) {
    if (!IsTokenChar(line[i])) return false;
  }
  for (size_t i = sp1 + 1; i < sp2; ++i) {
    if (line[i] <= ' ' || line[i] == 0x7f) return false;
  }
  std::string_view version = line.substr(sp2 + 1);
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return false;
  bool http10 = version == "HTTP/1.0";
  bool keep_alive = false;
  bool have_length = false;
  while (eol != std::string_view::npos) {
    head.remove_prefix(eol + 2);
    eol = head.find("\r\n");
    line = head.substr(0, eol);
    size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return false;
    for (size_t i = 0; i < colon; ++i) {
      if (!IsTokenChar(line[i])) return false;
    }
    std::string_view name = line.substr(0, colon);
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) {
      value.remove_prefix(1);
    }
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    auto is = [name](std::string_view n) {
      return name.size() == n.size() && strncasecmp(name.data(), n.data(), n.size()) == 0;
    };
    if (is("content-length")) {
      // Digits only, once (two lengths are how requests get smuggled), and bounded.
      if (have_length || value.empty() || value.size() > 7) return false;
      size_t n = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return false;
        n = n * 10 + (c - '0');
      }
      h->content_length = n;
      have_length = true;
    } else if (is("transfer-encoding")) {
      return false;  // chunked (or any coding) is not served
    } else if (is("connection")) {
      if (HasToken(value, "close")) h->close = true;
      if (HasToken(value, "keep-alive")) keep_alive = true;
    }
  }
  if (http10 && !keep_alive) h->close = true;
  return true;
}

// One connection's state between readiness events. Nothing is buffered here in the steady state
// (the loop reads and writes through its own scratch buffers), so an idle keep-alive connection
// costs this struct and no more.
struct Conn {
  std::string in;        // the start of a request that is not complete yet
  std::string out;       // replies the socket did not take yet
  size_t out_off = 0;    // of out, written so far; while out is pending, EPOLLOUT is watched
  bool closing = false;  // close once out is written; read nothing more
};

// Appends one reply to *out per complete request at the start of in, and returns how many bytes
// of in they took. After a request that asks to close, or at bytes that are not a request, sets
// *closing and returns in.size() (the rest is dropped).
size_t AnswerRequests(std::string_view in, std::string_view reply, std::string* out,
                      bool* closing) {
  size_t pos = 0;
  while (pos < in.size()) {
    std::string_view rest = in.substr(pos);
    size_t end = rest.substr(0, kMaxHead).find("\r\n\r\n");
    if (end == std::string_view::npos) {
      if (rest.size() >= kMaxHead) *closing = true;  // a head too long
      break;
    }
    Head h;
    if (!ParseHead(rest.substr(0, end), &h) || end + 4 + h.content_length > kMaxRequest) {
      *closing = true;
      break;
    }
    size_t total = end + 4 + h.content_length;
    if (rest.size() < total) break;  // the body is still coming
    out->append(reply);
    pos += total;
    if (h.close) {
      *closing = true;
      break;
    }
  }
  return *closing ? in.size() : pos;
}

// One thread's event loop: its listener and the connections accepted from it. Loop thread only.
class Loop {
 public:
  Loop(int listen_fd, std::string_view reply)
      : listen_fd_(listen_fd),
        ep_(epoll_create1(EPOLL_CLOEXEC)),
        reply_(reply),
        in_(kMaxBatch + kReadChunk) {}

  void Run() {
    if (ep_ < 0) Die("epoll_create1");
    Watch(listen_fd_, EPOLL_CTL_ADD, EPOLLIN);
    epoll_event events[256];
    for (;;) {
      int n = epoll_wait(ep_, events, 256, -1);
      if (n < 0 && errno != EINTR) Die("epoll_wait");
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == listen_fd_) {
          Accept();
          continue;
        }
        // By what is pending, not by the event's bits: a reset connection reports EPOLLOUT
        // (with EPOLLERR) even when only EPOLLIN is watched.
        bool ok = conns_[fd]->out.empty() ? Read(fd) : Flush(fd);
        if (!ok) Close(fd);
      }
    }
  }

 private:
  [[noreturn]] static void Die(const char* what) {
    std::perror(what);
    std::exit(1);
  }

  void Watch(int fd, int op, uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (epoll_ctl(ep_, op, fd, &ev) != 0) Die("epoll_ctl");
  }

  void Accept() {
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;  // EAGAIN (or EMFILE: a baseline does not defend against it)
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      if (conns_.size() <= static_cast<size_t>(fd)) conns_.resize(fd + 1);
      conns_[fd] = std::make_unique<Conn>();
      Watch(fd, EPOLL_CTL_ADD, EPOLLIN);
    }
  }

  // Reads until EAGAIN (or kMaxBatch), answers every complete request with one write(). False
  // when the connection is to be closed now.
  bool Read(int fd) {
    Conn* c = conns_[fd].get();
    size_t len = c->in.size();  // < kMaxRequest <= kMaxBatch: an incomplete request
    std::memcpy(in_.data(), c->in.data(), len);
    for (;;) {
      ssize_t n = read(fd, in_.data() + len, kReadChunk);
      if (n > 0) {
        len += n;
        if (len >= kMaxBatch) break;
      } else if (n == 0) {
        c->closing = true;  // the peer is done sending: answer what is complete, then close
        break;
      } else if (errno == EAGAIN) {
        break;
      } else if (errno != EINTR) {
        return false;
      }
    }
    out_.clear();
    size_t used = AnswerRequests({in_.data(), len}, reply_, &out_, &c->closing);
    if (used < len) {
      c->in.assign(in_.data() + used, len - used);
    } else if (!c->in.empty()) {
      std::string().swap(c->in);  // give the memory back: the connection may now stay idle
    }
    ssize_t n = WriteUntilAgain(fd, out_.data(), out_.size());
    if (n < 0) return false;
    if (static_cast<size_t>(n) < out_.size()) {
      // The rest waits for EPOLLOUT, and the connection is not read meanwhile, so a client that
      // does not read cannot make us buffer without bound.
      c->out.assign(out_.data() + n, out_.size() - n);
      c->out_off = 0;
      Watch(fd, EPOLL_CTL_MOD, EPOLLOUT);
      return true;
    }
    return !c->closing;
  }

  // On EPOLLOUT: writes what is pending. False when the connection is to be closed now.
  bool Flush(int fd) {
    Conn* c = conns_[fd].get();
    ssize_t n = WriteUntilAgain(fd, c->out.data() + c->out_off, c->out.size() - c->out_off);
    if (n < 0) return false;
    c->out_off += n;
    if (c->out_off < c->out.size()) return true;
    std::string().swap(c->out);
    c->out_off = 0;
    if (c->closing) return false;
    Watch(fd, EPOLL_CTL_MOD, EPOLLIN);
    return true;
  }

  // Bytes written (fewer than size on EAGAIN), or -1 on an error.
  static ssize_t WriteUntilAgain(int fd, const char* p, size_t size) {
    size_t done = 0;
    while (done < size) {
      ssize_t n = write(fd, p + done, size - done);
      if (n > 0) {
        done += n;
      } else if (n < 0 && errno == EAGAIN) {
        break;
      } else if (n < 0 && errno != EINTR) {
        return -1;
      }
    }
    return static_cast<ssize_t>(done);
  }

  void Close(int fd) {
    conns_[fd].reset();
    close(fd);  // also drops it from the epoll set
  }

  int listen_fd_;
  int ep_;
  std::string_view reply_;
  std::vector<char> in_;  // scratch: a connection's pending bytes plus what one Read() reads
  std::string out_;       // scratch: the replies of one Read()
  std::vector<std::unique_ptr<Conn>> conns_;  // by fd
};

// SO_REUSEPORT only when there are several listeners: with it, a stale server left on the port
// would silently take a share of the connections instead of failing our bind.
int Listen(uint16_t port, bool reuse_port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (reuse_port) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    std::perror("listen");
    std::exit(1);
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 8080;
  int threads = 1;
  std::string body = "{}";
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (a == "--body" && i + 1 < argc) {
      body = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--port P] [--threads N] [--body STR]\n", argv[0]);
      return 2;
    }
  }
  if (port < 0 || port > 65535 || threads < 1 || threads > 256 || body.size() > 65536) {
    std::fprintf(stderr, "%s: --port 0..65535, --threads 1..256, --body up to 64 KiB\n", argv[0]);
    return 2;
  }
  const std::string reply =
      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  signal(SIGPIPE, SIG_IGN);  // a peer that went away is an EPIPE from write(), not a signal
  // The first listener fixes the port (it may pick one); the others share it by SO_REUSEPORT,
  // and the kernel spreads new connections over them.
  std::vector<int> fds{Listen(static_cast<uint16_t>(port), threads > 1)};
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(fds[0], reinterpret_cast<sockaddr*>(&bound), &len);
  uint16_t bound_port = ntohs(bound.sin_port);
  while (static_cast<int>(fds.size()) < threads) fds.push_back(Listen(bound_port, true));
  std::printf("raw_http_server ready on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);
  std::vector<std::thread> others;
  for (size_t i = 1; i < fds.size(); ++i) {
    others.emplace_back([fd = fds[i], &reply] { Loop(fd, reply).Run(); });
  }
  Loop(fds[0], reply).Run();  // with --threads 1 the whole server is this one thread
}
