// The log file output (logging.h SetOutput; docs/logging.md): rotation by size and by period
// with the retention count, synchronous and asynchronous writing, JSON lines, and lines that
// stay whole when threads log at once (base/ is in CI's TSan run).

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "trpc/base/logging.h"

namespace trpc::log {
namespace {

namespace fs = std::filesystem;

class LogOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "log_output_" + std::to_string(::getpid()) + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    SetLevel(Level::kInfo);
  }
  void TearDown() override {
    ResetOutput();
    fs::remove_all(dir_);
  }
  // Every line of `path`; each must be whole (ends in '\n').
  static std::vector<std::string> Lines(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < all.size()) {
      size_t nl = all.find('\n', start);
      EXPECT_NE(nl, std::string::npos) << "a torn last line in " << path;
      if (nl == std::string::npos) break;
      lines.push_back(all.substr(start, nl - start));
      start = nl + 1;
    }
    return lines;
  }
  std::string dir_;
};

TEST_F(LogOutputTest, RotatesBySizeAndKeepsReserveCountFiles) {
  Output o;
  o.filename = dir_ + "/app.log";
  o.roll_size = 4096;
  o.reserve_count = 3;
  o.async = false;
  std::string err;
  ASSERT_TRUE(SetOutput(o, &err)) << err;
  const uint64_t rotations = GetOutputStats().rotations;
  for (int i = 0; i < 1000; ++i) TRPC_LOG_INFO("line {:05d} {}", i, std::string(40, 'x'));
  ResetOutput();
  EXPECT_TRUE(fs::exists(o.filename));
  for (int i = 1; i <= 3; ++i) EXPECT_TRUE(fs::exists(o.filename + "." + std::to_string(i))) << i;
  EXPECT_FALSE(fs::exists(o.filename + ".4"));
  EXPECT_GT(GetOutputStats().rotations - rotations, 10u);
  // Each file is within its size, holds whole lines, and the newest line is in the current one.
  int last = -1;
  for (const char* suffix : {".3", ".2", ".1", ""}) {
    const std::string path = o.filename + suffix;
    EXPECT_LE(fs::file_size(path), o.roll_size) << path;
    for (const std::string& line : Lines(path)) {
      size_t at = line.find("line ");
      ASSERT_NE(at, std::string::npos) << line;
      int n = std::stoi(line.substr(at + 5, 5));
      if (last >= 0) {
        EXPECT_EQ(n, last + 1) << "out of order in " << path;
      }
      last = n;
    }
  }
  EXPECT_EQ(last, 999);
}

TEST_F(LogOutputTest, ByHourNamesFilesByPeriodAndPrunesOldOnes) {
  // Old periods left by earlier runs: only the 2 newest are kept.
  for (const char* old : {"2020010100", "2020010101", "2020010102", "2020010103"}) {
    std::ofstream(dir_ + "/app.log." + old) << "old\n";
  }
  std::ofstream(dir_ + "/app.log.notastamp") << "kept\n";
  Output o;
  o.filename = dir_ + "/app.log";
  o.roll = Output::Roll::kByHour;
  o.reserve_count = 2;
  std::string err;
  ASSERT_TRUE(SetOutput(o, &err)) << err;
  TRPC_LOG_INFO("hello");
  ResetOutput();
  EXPECT_FALSE(fs::exists(dir_ + "/app.log.2020010100"));
  EXPECT_FALSE(fs::exists(dir_ + "/app.log.2020010101"));
  EXPECT_TRUE(fs::exists(dir_ + "/app.log.2020010102"));
  EXPECT_TRUE(fs::exists(dir_ + "/app.log.2020010103"));
  EXPECT_TRUE(fs::exists(dir_ + "/app.log.notastamp"));
  int current = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    std::string name = e.path().filename().string();
    if (name.size() == std::string("app.log.").size() + 10 && name > "app.log.2026") {
      ++current;
      std::vector<std::string> lines = Lines(e.path().string());
      ASSERT_EQ(lines.size(), 1u);
      EXPECT_NE(lines[0].find("] [info] [log_output_test.cc:"), std::string::npos) << lines[0];
      EXPECT_TRUE(lines[0].ends_with("hello"));
    }
  }
  EXPECT_EQ(current, 1);
}

// Four threads log at once through the writer thread with a small queue: every line is either
// written whole or counted as dropped.
TEST_F(LogOutputTest, AsyncLinesStayWholeAndDropsAreCounted) {
  Output o;
  o.filename = dir_ + "/async.log";
  o.roll_size = 1u << 30;
  o.queue_lines = 64;
  std::string err;
  ASSERT_TRUE(SetOutput(o, &err)) << err;
  const OutputStats before = GetOutputStats();
  constexpr int kThreads = 4;
  constexpr int kLines = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      for (int i = 0; i < kLines; ++i) TRPC_LOG_INFO("t{} n{} {}", t, i, std::string(100, 'y'));
    });
  }
  for (auto& th : threads) th.join();
  ResetOutput();
  const OutputStats after = GetOutputStats();
  std::vector<std::string> lines = Lines(o.filename);
  EXPECT_EQ(lines.size() + (after.lines_dropped - before.lines_dropped),
            uint64_t{kThreads} * kLines);
  EXPECT_EQ(after.lines_written - before.lines_written, lines.size());
  for (const std::string& line : lines) {
    ASSERT_TRUE(line.ends_with(std::string(100, 'y'))) << line;
    ASSERT_EQ(line.find("] [info] ["), 24u) << line;  // after "[YYYY-MM-DD HH:MM:SS.mmm"
  }
}

// The queue is bounded by bytes as well as lines: long lines (a peer's text in an error) are
// dropped and counted once the bytes waiting reach the bound.
TEST_F(LogOutputTest, AsyncQueueIsBoundedByBytes) {
  Output o;
  o.filename = dir_ + "/bytes.log";
  o.queue_lines = 1u << 20;  // never the limit here
  o.queue_bytes = 8192;
  std::string err;
  ASSERT_TRUE(SetOutput(o, &err)) << err;
  const OutputStats before = GetOutputStats();
  constexpr int kLines = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([] {
      for (int i = 0; i < kLines; ++i) TRPC_LOG_INFO("{}", std::string(4000, 'z'));
    });
  }
  for (auto& th : threads) th.join();
  ResetOutput();
  const OutputStats after = GetOutputStats();
  const uint64_t written = after.lines_written - before.lines_written;
  const uint64_t dropped = after.lines_dropped - before.lines_dropped;
  EXPECT_EQ(written + dropped, 2u * kLines);
  EXPECT_GT(dropped, 0u);  // two 4 KB lines fill the bound; the writer cannot keep up with that
  EXPECT_EQ(Lines(o.filename).size(), written);
}

TEST_F(LogOutputTest, JsonLines) {
  Output o;
  o.filename = dir_ + "/json.log";
  o.json = true;
  o.async = false;
  std::string err;
  ASSERT_TRUE(SetOutput(o, &err)) << err;
  TRPC_LOG_WARN("a \"quoted\" \\ line\nwith a newline");
  ResetOutput();
  std::vector<std::string> lines = Lines(o.filename);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].starts_with(R"({"time":")")) << lines[0];
  EXPECT_NE(lines[0].find(R"(","level":"warn","file":"log_output_test.cc","line":)"),
            std::string::npos)
      << lines[0];
  EXPECT_TRUE(lines[0].ends_with(R"("msg":"a \"quoted\" \\ line\nwith a newline"})")) << lines[0];
}

TEST_F(LogOutputTest, AFileThatCannotBeOpenedIsAnErrorAndChangesNothing) {
  Output o;
  o.filename = dir_ + "/no/such/dir/app.log";
  std::string err;
  EXPECT_FALSE(SetOutput(o, &err));
  EXPECT_NE(err.find("cannot open log file " + o.filename + ": No such file or directory"),
            std::string::npos)
      << err;
}

}  // namespace
}  // namespace trpc::log
