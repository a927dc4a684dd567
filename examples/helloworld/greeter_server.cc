// helloworld_server --config FILE: serves trpc.test.helloworld.Greeter in the thread model the
// config chooses, until SIGINT or SIGTERM (then stops gracefully). SayHello greets; BidiStream
// echoes each message (trpc_bench --stream measures streams with it).

#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "examples/helloworld/helloworld.trpc.pb.h"
#include "trpc/app/trpc_app.h"

namespace {

using trpc::test::helloworld::HelloReply;
using trpc::test::helloworld::HelloRequest;
using EchoStream = trpc::stream::AsyncStreamReaderWriter<HelloRequest, HelloReply>;

// The non-blocking echo (the merged model serves only this kind), as a loop object whose
// promise is the handler's future, set once when the stream ends. Continuations return nothing:
// a chain in which each round returns the next round's future would nest one future per
// message, and the whole chain would resolve recursively when the stream ends (a stack overflow
// after some ten thousand messages). Messages already there are echoed in a loop, so a client
// that sends many at once does not make it recurse either: it waits (through a continuation)
// only for a message that has not come yet or for the client's window.
class EchoLoop final : public std::enable_shared_from_this<EchoLoop> {
 public:
  static trpc::Future<> Run(const EchoStream& stream) {
    auto loop = std::make_shared<EchoLoop>(stream);
    trpc::Future<> done = loop->done_.GetFuture();
    loop->Loop();
    return done;
  }

  explicit EchoLoop(const EchoStream& stream) : stream_(stream) {}

 private:
  void Loop() {
    for (;;) {
      trpc::Future<std::optional<HelloRequest>> read = stream_.Read();
      if (!read.IsReady() && !read.IsFailed()) {
        std::move(read).Then(
            [self = shared_from_this()](trpc::Future<std::optional<HelloRequest>>&& r) {
              if (self->Echo(std::move(r))) self->Loop();
            });
        return;
      }
      if (!Echo(std::move(read))) return;
    }
  }

  // Echoes the message `read` brought; true when the next may be read at once.
  bool Echo(trpc::Future<std::optional<HelloRequest>>&& read) {
    if (read.IsFailed()) {
      done_.SetException(read.GetException());
      return false;
    }
    std::optional<HelloRequest> req = read.GetValue();
    if (!req) {  // the client has sent everything
      done_.SetValue();
      return false;
    }
    HelloReply rsp;
    rsp.set_msg(std::move(*req->mutable_msg()));
    trpc::Future<> written = stream_.Write(rsp);
    if (written.IsReady()) return true;
    if (written.IsFailed()) {
      done_.SetException(written.GetException());
      return false;
    }
    std::move(written).Then([self = shared_from_this()](trpc::Future<>&& w) {
      if (w.IsFailed()) {
        self->done_.SetException(w.GetException());
      } else {
        self->Loop();
      }
    });
    return false;
  }

  const EchoStream stream_;
  trpc::Promise<> done_;
};

class GreeterImpl final : public trpc::test::helloworld::Greeter {
 public:
  // `fiber`: the server runs the fiber model, where BidiStream blocks in its fiber; the merged
  // model gets the non-blocking echo instead.
  explicit GreeterImpl(bool fiber) {
    if (!fiber) {
      AddAsyncBidiStreamMethod<HelloRequest, HelloReply>(
          "/trpc.test.helloworld.Greeter/BidiStream",
          [](const trpc::ServerContextPtr&, const EchoStream& stream) {
            return EchoLoop::Run(stream);
          });
    }
  }

  trpc::Status SayHello(trpc::ServerContextPtr ctx, const HelloRequest* req,
                        HelloReply* rsp) override {
    rsp->set_msg("Hello, " + req->msg());
    return trpc::kSuccStatus;
  }

  trpc::Status BidiStream(const trpc::ServerContextPtr& ctx,
                          const trpc::stream::StreamReader<HelloRequest>& reader,
                          trpc::stream::StreamWriter<HelloReply>* writer) override {
    for (;;) {
      HelloRequest req;
      trpc::Status st = reader.Read(&req);
      if (st.StreamEof()) return trpc::kSuccStatus;  // the client has sent everything
      if (!st.OK()) return st;
      HelloReply rsp;
      rsp.set_msg(req.msg());
      if (st = writer->Write(rsp); !st.OK()) return st;
    }
  }
};

class HelloWorldServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    // The `server.service[].name` this implementation serves.
    auto greeter = std::make_shared<GreeterImpl>(!GetConfig().global.threadmodel.fiber.empty());
    RegisterService("trpc.test.helloworld.Greeter", greeter);
    // The same implementation over gRPC, where the config has this entry (server_grpc.yaml).
    RegisterService("greeter_grpc", greeter);
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  HelloWorldServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  std::printf("helloworld_server ready\n");
  std::fflush(stdout);
  app.Wait();
  return 0;
}
