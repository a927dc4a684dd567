// chat_server --config FILE: one chat room (chat.proto), served over trpc and gRPC in the
// thread model the config chooses, until SIGINT or SIGTERM. The handlers are the non-blocking
// kind (futures), which both thread models run; the room's lines are kept in memory (the last
// 1000).

#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "examples/stream/chat.trpc.pb.h"
#include "trpc/app/trpc_app.h"
#include "trpc/future/loop.h"

namespace {

using trpc::examples::chat::HistoryRequest;
using trpc::examples::chat::Line;
using trpc::examples::chat::PostReply;

// The room: numbered lines, shared by every stream on every worker.
class Room {
 public:
  Line Add(Line line) {
    std::lock_guard<std::mutex> lock(mu_);
    line.set_seq(++seq_);
    lines_.push_back(line);
    if (lines_.size() > kKept) lines_.pop_front();
    return line;
  }
  std::vector<Line> Last(size_t n) const {
    std::lock_guard<std::mutex> lock(mu_);
    n = std::min(n, lines_.size());
    return std::vector<Line>(lines_.end() - static_cast<std::ptrdiff_t>(n), lines_.end());
  }

 private:
  static constexpr size_t kKept = 1000;
  mutable std::mutex mu_;
  std::deque<Line> lines_;
  uint64_t seq_ = 0;
};

using Reader = trpc::stream::AsyncStreamReader<Line>;
using Writer = trpc::stream::AsyncStreamWriter<Line>;
using Duplex = trpc::stream::AsyncStreamReaderWriter<Line, Line>;

// Each loop is trpc::DoWhile: its steps never block a thread, and however long a stream runs
// the stack stays flat (a step that returned the next step's future would chain them all).
trpc::Future<uint64_t> PostAll(std::shared_ptr<Room> room, Reader reader) {
  auto posted = std::make_shared<uint64_t>(0);
  return trpc::DoWhile([room, reader, posted] {
           return reader.Read().Then([room, posted](std::optional<Line>&& line) {
             if (!line) return false;  // the client is done
             room->Add(std::move(*line));
             ++*posted;
             return true;
           });
         })
      .Then([posted] { return *posted; });
}

trpc::Future<> WriteAll(Writer writer, std::shared_ptr<std::vector<Line>> lines) {
  auto next = std::make_shared<size_t>(0);
  return trpc::DoWhile([writer, lines, next] {
    if (*next == lines->size()) return trpc::MakeReadyFuture<bool>(false);
    return writer.Write((*lines)[(*next)++]).Then([] { return true; });
  });
}

trpc::Future<> TalkLoop(std::shared_ptr<Room> room, Duplex stream) {
  return trpc::DoWhile([room, stream] {
    return stream.Read().Then([room, stream](std::optional<Line>&& line) {
      if (!line) return trpc::MakeReadyFuture<bool>(false);
      return stream.Write(room->Add(std::move(*line))).Then([] { return true; });
    });
  });
}

class RoomImpl final : public trpc::examples::chat::AsyncRoom {
 public:
  trpc::Future<PostReply> Post(const trpc::ServerContextPtr&, const Reader& reader) override {
    return PostAll(room_, reader).Then([](uint64_t posted) {
      PostReply reply;
      reply.set_posted(posted);
      return reply;
    });
  }

  trpc::Future<> History(const trpc::ServerContextPtr&, const HistoryRequest& req,
                         const Writer& writer) override {
    const size_t n = req.last() == 0 ? 10 : std::min<uint32_t>(req.last(), 100);
    return WriteAll(writer, std::make_shared<std::vector<Line>>(room_->Last(n)));
  }

  trpc::Future<> Talk(const trpc::ServerContextPtr&, const Duplex& stream) override {
    return TalkLoop(room_, stream);
  }

 private:
  std::shared_ptr<Room> room_ = std::make_shared<Room>();
};

class ChatServer final : public trpc::TrpcApp {
 protected:
  int Initialize() override {
    auto room = std::make_shared<RoomImpl>();
    RegisterService("trpc.examples.chat.Room", room);  // trpc
    RegisterService("chat_grpc", room);                // the same room over gRPC
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  ChatServer app;
  if (int rc = app.Main(argc, argv); rc != 0) return rc;
  std::printf("chat_server ready\n");
  std::fflush(stdout);
  app.Wait();
  return 0;
}
