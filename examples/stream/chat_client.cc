// chat_client --config FILE --name NAME [--say TEXT]...: joins the room of the config's
// `client.service[]` entry "trpc.examples.chat.Room" (over trpc or gRPC, as it says). It
// posts the --say lines (a client stream), talks two more (a bidirectional stream: each one
// comes back numbered), then prints the room's last 10 lines (a server stream). Exits non-zero
// on any error.

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "examples/stream/chat.trpc.pb.h"
#include "trpc/app/run_in_trpc_runtime.h"
#include "trpc/client/trpc_client.h"
#include "trpc/config/config.h"

namespace {

using trpc::examples::chat::HistoryRequest;
using trpc::examples::chat::Line;
using trpc::examples::chat::PostReply;
using trpc::examples::chat::RoomServiceProxy;

int Fail(const char* what, const trpc::Status& st) {
  std::fprintf(stderr, "%s: %s\n", what, st.ToString().c_str());
  return 1;
}

int Chat(const std::string& name, const std::vector<std::string>& says) {
  auto room = trpc::GetTrpcClient()->GetProxy<RoomServiceProxy>("trpc.examples.chat.Room");
  if (!room) return 1;
  Line line;
  line.set_from(name);

  // Post: many lines up, one reply.
  trpc::stream::ClientWriter<Line, PostReply> post;
  if (auto st = room->Post(trpc::MakeClientContext(), &post); !st.OK()) return Fail("Post", st);
  for (const std::string& text : says) {
    line.set_text(text);
    if (auto st = post.Write(line); !st.OK()) return Fail("Post: write", st);
  }
  PostReply posted;
  if (auto st = post.Finish(&posted); !st.OK()) return Fail("Post: finish", st);
  std::printf("posted %llu lines\n", static_cast<unsigned long long>(posted.posted()));

  // Talk: each line comes back with its number.
  trpc::stream::ClientReaderWriter<Line, Line> talk;
  if (auto st = room->Talk(trpc::MakeClientContext(), &talk); !st.OK()) return Fail("Talk", st);
  for (const char* text : {"anyone here?", "bye"}) {
    line.set_text(text);
    if (auto st = talk.Write(line); !st.OK()) return Fail("Talk: write", st);
    Line ack;
    if (auto st = talk.Read(&ack); !st.OK()) return Fail("Talk: read", st);
    std::printf("said #%llu: %s\n", static_cast<unsigned long long>(ack.seq()), ack.text().c_str());
  }
  talk.WritesDone();
  if (auto st = talk.Finish(); !st.OK()) return Fail("Talk: finish", st);

  // History: the latest lines down.
  HistoryRequest req;
  req.set_last(10);
  trpc::stream::ClientReader<Line> history;
  if (auto st = room->History(trpc::MakeClientContext(), req, &history); !st.OK()) {
    return Fail("History", st);
  }
  std::printf("the room's last lines:\n");
  for (;;) {
    Line got;
    trpc::Status st = history.Read(&got);
    if (st.StreamEof()) break;
    if (!st.OK()) return Fail("History: read", st);
    std::printf("  #%llu %s: %s\n", static_cast<unsigned long long>(got.seq()), got.from().c_str(),
                got.text().c_str());
  }
  if (auto st = history.Finish(); !st.OK()) return Fail("History: finish", st);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string config_path;
  std::string name = "guest";
  std::vector<std::string> says;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--config") == 0 && i + 1 < argc) {
      config_path = argv[++i];
    } else if (std::strcmp(argv[i], "--name") == 0 && i + 1 < argc) {
      name = argv[++i];
    } else if (std::strcmp(argv[i], "--say") == 0 && i + 1 < argc) {
      says.push_back(argv[++i]);
    } else {
      config_path.clear();
      break;
    }
  }
  if (config_path.empty()) {
    std::fprintf(stderr, "usage: %s --config FILE [--name NAME] [--say TEXT]...\n", argv[0]);
    return 2;
  }
  trpc::Config config;
  std::string err;
  if (!trpc::LoadConfig(config_path, &config, &err)) {
    std::fprintf(stderr, "%s\n", err.c_str());
    return 1;
  }
  return trpc::RunInTrpcRuntime(config, [&] { return Chat(name, says); });
}
