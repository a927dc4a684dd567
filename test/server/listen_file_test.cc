#include "trpc/server/detail/listen_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace trpc::detail {
namespace {

NetAddress Addr(const std::string& ip, uint16_t port) {
  NetAddress a;
  EXPECT_TRUE(NetAddress::FromIpPort(ip, port, &a)) << ip;
  return a;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ListenFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "listen_file_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string dir_;
};

TEST(ListenFileFormatTest, OneLinePerListenerIPv6InBrackets) {
  EXPECT_EQ(FormatListenFile({}), "");
  EXPECT_EQ(FormatListenFile({{"trpc.test.Greeter", Addr("127.0.0.1", 41237)},
                              {"greeter_http", Addr("::1", 8080)},
                              {"admin", Addr("0.0.0.0", 9)}}),
            "trpc.test.Greeter 127.0.0.1:41237\ngreeter_http [::1]:8080\nadmin 0.0.0.0:9\n");
}

TEST_F(ListenFileTest, WritesWholeFileAndReplacesAnOldOne) {
  std::string path = dir_ + "/listen";
  std::ofstream(path) << "stale 127.0.0.1:1\nlonger than the new text\n";
  std::string err;
  ASSERT_TRUE(WriteListenFile(path, "a 127.0.0.1:2\n", &err)) << err;
  EXPECT_EQ(Slurp(path), "a 127.0.0.1:2\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ASSERT_TRUE(RemoveListenFile(path, &err)) << err;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_TRUE(RemoveListenFile(path, &err)) << "a file that is not there is removed already";
}

TEST_F(ListenFileTest, BadPathsSayWhatFailed) {
  std::string err;
  EXPECT_FALSE(WriteListenFile(dir_ + "/no/such/dir/listen", "x\n", &err));
  EXPECT_EQ(err, "cannot write '" + dir_ + "/no/such/dir/listen.tmp': No such file or directory");
  // A directory where the file should go: the rename fails, and no PATH.tmp is left.
  std::string sub = dir_ + "/sub";
  ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
  EXPECT_FALSE(WriteListenFile(sub, "x\n", &err));
  EXPECT_EQ(err, "cannot rename '" + sub + ".tmp' to '" + sub + "': Is a directory");
  EXPECT_FALSE(std::filesystem::exists(sub + ".tmp"));
  ASSERT_EQ(mkdir((sub + "/x").c_str(), 0755), 0);
  EXPECT_FALSE(RemoveListenFile(sub, &err));
  EXPECT_NE(err.find("cannot remove '" + sub + "'"), std::string::npos) << err;
}

}  // namespace
}  // namespace trpc::detail
