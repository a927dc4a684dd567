// raw_echo_server [--port P] [--threads N]: the physical limit of this machine's syscall path for
// trpc echo frames. Plain Linux and the frame format by hand, nothing of the framework: each of N
// threads (default 1) owns a SO_REUSEPORT listener on 127.0.0.1:P (default 12345; 0 picks a free
// port) and one level-triggered epoll. Per readable connection it reads until EAGAIN, answers
// every complete unary request frame with the request's body unchanged, and writes all the
// answers of that batch with one write(). Prints "raw_echo_server ready on 127.0.0.1:PORT".
//
// The body of a Greeter HelloRequest is a valid HelloReply (same field layout), so the framework's
// client sees a correct echo. Bad frames close the connection; one-way calls get no answer.
//
// Frame (big-endian; the whole of it in docs/protocol.md):
//   | 09 30 | type u8 | stream type u8 | total u32 | header size u16 | stream id u32 | 0 u16 |
//   | protobuf header | body | attachment |

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr size_t kFixedHeaderSize = 2 + 1 + 1 + 4 + 2 + 4 + 2;
constexpr uint16_t kMagic = 0x930;
constexpr uint32_t kMaxPacketSize = 10'000'000;  // the framework's default max_packet_size
constexpr size_t kReadChunk = 64 * 1024;
// Stop reading and answer once this much is buffered, so a flood cannot grow the buffers
// without bound (level-triggered epoll brings us back for the rest).
constexpr size_t kMaxBatch = 1024 * 1024;

uint32_t Be16(const char* p) {
  return static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 8 | static_cast<uint8_t>(p[1]);
}
uint32_t Be32(const char* p) { return Be16(p) << 16 | Be16(p + 2); }
void PutBe16(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
void PutBe32(char* p, uint32_t v) {
  PutBe16(p, v >> 16);
  PutBe16(p + 2, v);
}

bool ReadVarint(const char*& p, const char* end, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    uint8_t b = static_cast<uint8_t>(*p++);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) return true;
  }
  return false;
}

// A varint field of a proto3 message; zero is the default, which proto3 leaves out.
void PutVarintField(std::vector<char>* out, uint32_t field, uint64_t v) {
  if (v == 0) return;
  out->push_back(static_cast<char>(field << 3));
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(v | 0x80));
  out->push_back(static_cast<char>(v));
}

// The RequestProtocol fields the answer needs (field numbers from trpc.proto).
struct RequestHeader {
  uint32_t version = 0;          // 1
  uint32_t call_type = 0;        // 2
  uint32_t request_id = 0;       // 3
  uint32_t attachment_size = 0;  // 12
};

// Walks the protobuf wire format, skipping every field but the four above.
bool ParseRequestHeader(const char* p, const char* end, RequestHeader* h) {
  while (p < end) {
    uint64_t tag, v;
    if (!ReadVarint(p, end, &tag)) return false;
    switch (tag & 7) {
      case 0:  // varint
        if (!ReadVarint(p, end, &v)) return false;
        if (tag >> 3 == 1) h->version = static_cast<uint32_t>(v);
        if (tag >> 3 == 2) h->call_type = static_cast<uint32_t>(v);
        if (tag >> 3 == 3) h->request_id = static_cast<uint32_t>(v);
        if (tag >> 3 == 12) h->attachment_size = static_cast<uint32_t>(v);
        break;
      case 1:  // fixed64
        if (end - p < 8) return false;
        p += 8;
        break;
      case 2:  // length-delimited
        if (!ReadVarint(p, end, &v) || v > static_cast<uint64_t>(end - p)) return false;
        p += v;
        break;
      case 5:  // fixed32
        if (end - p < 4) return false;
        p += 4;
        break;
      default:
        return false;
    }
  }
  return true;
}

struct Conn {
  std::vector<char> in;
  size_t in_len = 0;
  std::vector<char> out;
  size_t out_off = 0;             // written so far
  bool waiting_to_write = false;  // watching EPOLLOUT instead of EPOLLIN
};

// Appends one response frame per complete request in c->in and drops those bytes. False on a
// protocol error.
bool AnswerFrames(Conn* c) {
  size_t pos = 0;
  bool ok = true;
  while (c->in_len - pos >= kFixedHeaderSize) {
    const char* f = c->in.data() + pos;
    uint32_t total = Be32(f + 4);
    uint32_t header_size = Be16(f + 8);
    // Decided from the fixed header alone, before the payload is buffered.
    if (Be16(f) != kMagic || f[2] != 0 || f[3] != 0 || total < kFixedHeaderSize + header_size ||
        total > kMaxPacketSize) {
      ok = false;
      break;
    }
    if (c->in_len - pos < total) break;
    RequestHeader h;
    const char* header = f + kFixedHeaderSize;
    if (!ParseRequestHeader(header, header + header_size, &h) ||
        h.attachment_size > total - kFixedHeaderSize - header_size) {
      ok = false;
      break;
    }
    if (h.call_type != 1) {
      uint32_t body_size = total - kFixedHeaderSize - header_size - h.attachment_size;
      size_t start = c->out.size();
      c->out.resize(start + kFixedHeaderSize);
      PutVarintField(&c->out, 1, h.version);  // ResponseProtocol: the same field numbers
      PutVarintField(&c->out, 2, h.call_type);
      PutVarintField(&c->out, 3, h.request_id);
      uint32_t rsp_header_size = static_cast<uint32_t>(c->out.size() - start - kFixedHeaderSize);
      c->out.insert(c->out.end(), header + header_size, header + header_size + body_size);
      char* r = c->out.data() + start;
      std::memset(r, 0, kFixedHeaderSize);
      PutBe16(r, kMagic);
      PutBe32(r + 4, static_cast<uint32_t>(c->out.size() - start));
      PutBe16(r + 8, rsp_header_size);
    }
    pos += total;
  }
  std::memmove(c->in.data(), c->in.data() + pos, c->in_len - pos);
  c->in_len -= pos;
  return ok;
}

class Loop {
 public:
  explicit Loop(int listen_fd) : listen_fd_(listen_fd), ep_(epoll_create1(EPOLL_CLOEXEC)) {}

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
        bool ok = (events[i].events & EPOLLOUT) != 0 ? Flush(fd) : Read(fd);
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

  bool Read(int fd) {
    Conn* c = conns_[fd].get();
    for (;;) {
      if (c->in.size() - c->in_len < kReadChunk) c->in.resize(c->in_len + kReadChunk);
      ssize_t n = read(fd, c->in.data() + c->in_len, kReadChunk);
      if (n > 0) {
        c->in_len += n;
        if (c->in_len >= kMaxBatch) break;
      } else if (n == 0) {
        return false;
      } else if (errno == EAGAIN) {
        break;
      } else if (errno != EINTR) {
        return false;
      }
    }
    if (!AnswerFrames(c)) return false;
    return c->out.empty() || Flush(fd);
  }

  // Writes what is pending; while some is left, waits for EPOLLOUT instead of reading, so a
  // client that does not read cannot make us buffer without bound.
  bool Flush(int fd) {
    Conn* c = conns_[fd].get();
    while (c->out_off < c->out.size()) {
      ssize_t n = write(fd, c->out.data() + c->out_off, c->out.size() - c->out_off);
      if (n > 0) {
        c->out_off += n;
      } else if (n < 0 && errno == EAGAIN) {
        if (!c->waiting_to_write) Watch(fd, EPOLL_CTL_MOD, EPOLLOUT);
        c->waiting_to_write = true;
        return true;
      } else if (n < 0 && errno != EINTR) {
        return false;
      }
    }
    c->out.clear();
    c->out_off = 0;
    if (c->waiting_to_write) Watch(fd, EPOLL_CTL_MOD, EPOLLIN);
    c->waiting_to_write = false;
    return true;
  }

  void Close(int fd) {
    conns_[fd].reset();
    close(fd);  // also drops it from the epoll set
  }

  int listen_fd_;
  int ep_;
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
  int port = 12345;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--port P] [--threads N]\n", argv[0]);
      return 2;
    }
  }
  if (port < 0 || port > 65535 || threads < 1 || threads > 256) {
    std::fprintf(stderr, "%s: --port 0..65535, --threads 1..256\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a peer that went away is an EPIPE from write(), not a signal
  // The first listener fixes the port (it may pick one); the others share it by SO_REUSEPORT,
  // and the kernel spreads new connections over them.
  std::vector<int> fds{Listen(static_cast<uint16_t>(port), threads > 1)};
  sockaddr_in bound{};
  socklen_t len = sizeof(bound);
  getsockname(fds[0], reinterpret_cast<sockaddr*>(&bound), &len);
  uint16_t bound_port = ntohs(bound.sin_port);
  while (static_cast<int>(fds.size()) < threads) fds.push_back(Listen(bound_port, true));
  std::printf("raw_echo_server ready on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);
  std::vector<std::thread> others;
  for (size_t i = 1; i < fds.size(); ++i) others.emplace_back([fd = fds[i]] { Loop(fd).Run(); });
  Loop(fds[0]).Run();  // with --threads 1 the whole server is this one thread
}
