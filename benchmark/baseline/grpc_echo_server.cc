// grpc_echo_server [--port P] [--mode callback|cq] [--threads N] [--tls-cert F --tls-key F]:
// the peer users pick instead,
// serving the same Greeter (examples/helloworld/helloworld.proto) over gRPC with Debian's gRPC C++:
// SayHello replies with the request's msg unchanged, like examples/echo's echo_server. Two ways to
// serve it:
//
// - `--mode callback` (default): the callback API, the one gRPC recommends for new servers; gRPC
//   runs the handlers on its own threads, whose number no API sets (1.51 starts half the
//   machine's cores, 2 to 16, whatever CPUs the process may use). `--threads N` (default 1)
//   bounds what they use instead: the process is confined to the first N CPUs of its affinity
//   mask before gRPC starts a thread, so N cores serve, as N workers do in the other servers
//   (with N or fewer CPUs allowed, e.g. under `taskset -c 1`, nothing changes).
// - `--mode cq`: the classic asynchronous API, as gRPC's own async benchmark server uses it
//   (test/cpp/qps/server_async.cc): Greeter::AsyncService with one completion queue per thread
//   (N threads, default 1), each queue holding its own kRequestsPerQueue outstanding
//   RequestSayHello calls; per call a CallData that answers and is deleted when Finish completes
//   (a new one takes its place among the outstanding requests as soon as its call arrives).
//
// Both modes serve SayHello; `--mode callback` also serves BidiStream, a bidirectional stream
// that echoes each HelloRequest's msg in a HelloReply (as helloworld_server's BidiStream does, so
// `trpc_bench --stream --protocol grpc` measures either): a ServerBidiReactor per stream, with one
// operation outstanding at a time (read a message, write its echo, read the next), finished OK
// when the client half-closes. The --mode cq service does not serve it.
//
// Abseil's mutex deadlock detection, which Debian's build (no NDEBUG) leaves on, is turned off
// as in a release build of gRPC; TRPC_GRPC_PEER_DEADLOCK_DETECTION=1 in the environment keeps it
// (docs/benchmark.md, "The grpc++ baseline", for what it costs).
//
// `--tls-cert` and `--tls-key` (PEM files) serve over TLS (grpc::SslServerCredentials, ALPN h2)
// instead of h2c, for the TLS benchmark (benchmark/grpc_bench.py --tls).
//
// `--port` and `--threads` are the start-up flags every benchmark server takes (the benchmark
// scripts pass both, whatever the mode). Listens on 127.0.0.1:P (default 50051; 0 picks a free
// port), prints "grpc_echo_server ready on 127.0.0.1:PORT", and on SIGINT or SIGTERM shuts down
// (in-flight calls get kShutdownGrace, then are cancelled) and exits 0. Built only when CMake
// finds gRPC (TRPC_BUILD_GRPC_PEER, benchmark/baseline/README.md).

#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>
#include <sched.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "helloworld.grpc.pb.h"

namespace {

using trpc::test::helloworld::Greeter;
using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;

// Outstanding RequestSayHello calls per completion queue in --mode cq. gRPC matches a new call
// first with the requests of the queue its connection belongs to, then with the other queues',
// and queues it unmatched when there are none; this many keeps every call matched on its own
// queue at the concurrency the benchmarks use (gRPC's benchmark posts thousands per queue).
constexpr int kRequestsPerQueue = 1000;
// How long Shutdown() lets in-flight calls finish before it cancels them.
constexpr std::chrono::seconds kShutdownGrace{2};

// One BidiStream call: reads a message, writes its echo, reads the next. Only one operation is
// outstanding at a time, so the callbacks never run concurrently and Finish is called once: when
// a read fails (the client half-closed, or the call was cancelled) or a write fails. gRPC deletes
// nothing itself: OnDone, its last callback, does.
class EchoStream final : public grpc::ServerBidiReactor<HelloRequest, HelloReply> {
 public:
  EchoStream() { StartRead(&req_); }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::OK);
      return;
    }
    rsp_.mutable_msg()->swap(*req_.mutable_msg());
    StartWrite(&rsp_);
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the echo could not be written"));
      return;
    }
    StartRead(&req_);
  }

  void OnDone() override { delete this; }

 private:
  HelloRequest req_;
  HelloReply rsp_;
};

class EchoGreeter final : public Greeter::CallbackService {
 public:
  grpc::ServerUnaryReactor* SayHello(grpc::CallbackServerContext* ctx, const HelloRequest* req,
                                     HelloReply* rsp) override {
    rsp->set_msg(req->msg());
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerBidiReactor<HelloRequest, HelloReply>* BidiStream(
      grpc::CallbackServerContext* ctx) override {
    (void)ctx;
    return new EchoStream();
  }
};

// One SayHello call in --mode cq, and the tag of its one pending operation: first the request
// (RequestSayHello), then the reply (Finish). Only the thread polling `cq` touches it after the
// constructor.
class CallData {
 public:
  CallData(Greeter::AsyncService* service, grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), responder_(&ctx_) {
    service_->RequestSayHello(&ctx_, &req_, &responder_, cq_, cq_, this);
  }

  // The pending operation completed. A request that did not come (ok false: the server is shutting
  // down) or a finished reply (whether or not it was sent) ends the CallData.
  void Proceed(bool ok) {
    if (finishing_ || !ok) {
      delete this;
      return;
    }
    // Replace this one among the queue's outstanding requests before answering. It is requested
    // while this call is still alive, which keeps it before the end of server->Shutdown(): that
    // waits for every call to be released, so once it returns no thread starts another operation
    // and the queues may be shut down.
    new CallData(service_, cq_);
    rsp_.mutable_msg()->swap(*req_.mutable_msg());
    finishing_ = true;
    responder_.Finish(rsp_, grpc::Status::OK, this);
  }

 private:
  Greeter::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext ctx_;
  HelloRequest req_;
  HelloReply rsp_;
  grpc::ServerAsyncResponseWriter<HelloReply> responder_;
  bool finishing_ = false;
};

// --mode callback: confines the process to the first `n` CPUs of its affinity mask (all of them
// when it has no more). Called before any thread starts, so every thread inherits the mask.
bool ConfineToCpus(int n) {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return false;
  cpu_set_t keep;
  CPU_ZERO(&keep);
  int kept = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && kept < n; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    CPU_SET(cpu, &keep);
    ++kept;
  }
  return sched_setaffinity(0, sizeof(keep), &keep) == 0;
}

// A --mode cq thread: runs the calls of its queue until the queue is shut down and drained.
void Poll(grpc::ServerCompletionQueue* cq) {
  void* tag = nullptr;
  bool ok = false;
  while (cq->Next(&tag, &ok)) static_cast<CallData*>(tag)->Proceed(ok);
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  int port = 50051;
  std::string_view mode = "callback";
  int threads = 0;  // 0: not given
  std::string tls_cert, tls_key;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--port" && i + 1 < argc) {
      port = std::atoi(argv[++i]);
    } else if (a == "--mode" && i + 1 < argc) {
      mode = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
      if (threads < 1) threads = -1;
    } else if (a == "--tls-cert" && i + 1 < argc) {
      tls_cert = argv[++i];
    } else if (a == "--tls-key" && i + 1 < argc) {
      tls_key = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--port P] [--mode callback|cq] [--threads N] [--tls-cert F "
                   "--tls-key F]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string cert_pem, key_pem;
  if (tls_cert.empty() != tls_key.empty() ||
      (!tls_cert.empty() && (!ReadFile(tls_cert, &cert_pem) || !ReadFile(tls_key, &key_pem)))) {
    std::fprintf(stderr, "%s: --tls-cert and --tls-key name two readable PEM files\n", argv[0]);
    return 2;
  }
  if (port < 0 || port > 65535 || (mode != "callback" && mode != "cq") || threads < 0 ||
      threads > 256) {
    std::fprintf(stderr, "%s: --port 0..65535, --mode callback or cq, --threads 1..256\n", argv[0]);
    return 2;
  }
  if (threads == 0) threads = 1;
  // Debian builds Abseil without NDEBUG, so absl::Mutex checks lock order on every Lock(): each
  // one takes a process-wide spin lock, and gRPC locks about 30 times per call. gRPC's own
  // release builds have the check off; so does this peer, unless the variable is set.
  if (std::getenv("TRPC_GRPC_PEER_DEADLOCK_DETECTION") == nullptr) {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  if (mode == "callback" && !ConfineToCpus(threads)) {
    std::perror("grpc_echo_server: sched_setaffinity");
    return 1;
  }
  // Blocked before gRPC starts its threads (and before ours), so they inherit the mask and only
  // sigwait() below receives the stop signals.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  EchoGreeter callback_service;
  Greeter::AsyncService async_service;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> cqs;  // outlive the server
  int bound_port = 0;
  grpc::ServerBuilder builder;
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!cert_pem.empty()) {
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({key_pem, cert_pem});
    creds = grpc::SslServerCredentials(ssl);
  }
  builder.AddListeningPort("127.0.0.1:" + std::to_string(port), creds, &bound_port);
  if (mode == "cq") {
    builder.RegisterService(&async_service);
    for (int i = 0; i < threads; ++i) cqs.push_back(builder.AddCompletionQueue());
  } else {
    builder.RegisterService(&callback_service);
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    std::fprintf(stderr, "%s: cannot listen on 127.0.0.1:%d\n", argv[0], port);
    return 1;
  }
  for (auto& cq : cqs) {
    for (int i = 0; i < kRequestsPerQueue; ++i) new CallData(&async_service, cq.get());
  }
  std::vector<std::thread> pollers;
  for (auto& cq : cqs) pollers.emplace_back(Poll, cq.get());
  std::printf("grpc_echo_server ready on 127.0.0.1:%d\n", bound_port);
  std::fflush(stdout);
  int sig = 0;
  sigwait(&stop, &sig);
  // Stops accepting, lets in-flight calls finish for kShutdownGrace, then cancels the rest, and
  // returns once every call is released (the pollers keep running meanwhile: they complete the
  // calls, and get back the outstanding requests with ok false). No operation is started on a
  // queue after that, so shutting the queues down is safe; each poller drains its own and ends.
  server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  for (auto& cq : cqs) cq->Shutdown();
  for (auto& t : pollers) t.join();
  return 0;
}
