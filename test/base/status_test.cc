#include "trpc/base/status.h"

#include <gtest/gtest.h>

namespace trpc {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.OK());
  EXPECT_EQ(s.GetFrameworkRetCode(), 0);
  EXPECT_EQ(s.GetFuncRetCode(), 0);
  EXPECT_EQ(s.ErrorMessage(), "");
  EXPECT_EQ(s.ToString(), "OK");
  EXPECT_TRUE(kSuccStatus.OK());
}

TEST(StatusTest, FrameworkError) {
  Status s(kServerNoFuncErr, "no such method");
  EXPECT_FALSE(s.OK());
  EXPECT_EQ(s.GetFrameworkRetCode(), kServerNoFuncErr);
  EXPECT_EQ(s.ToString(), "framework error 12 (no_func): no such method");
}

TEST(StatusTest, FuncErrorAloneIsNotOk) {
  Status s(0, 7, "handler said no");
  EXPECT_FALSE(s.OK());
  EXPECT_EQ(s.ToString(), "application error 7: handler said no");
}

TEST(StatusTest, NamedFactoriesSayWhichCodeTheySet) {
  Status app = Status::AppError(-404, "no such user");
  EXPECT_FALSE(app.OK());
  EXPECT_EQ(app.GetFrameworkRetCode(), 0);
  EXPECT_EQ(app.GetFuncRetCode(), -404);
  EXPECT_EQ(app.ErrorMessage(), "no such user");
  EXPECT_EQ(app.ToString(), "application error -404: no such user");
  EXPECT_EQ(Status::AppError(5, "").ToString(), "application error 5");
  EXPECT_EQ(Status(kServerSystemErr, 5, "both").ToString(),
            "framework error 31 (server_system), application code 5: both");
  Status fw = Status::FrameworkError(kServerOverloadErr, "busy");
  EXPECT_EQ(fw.GetFrameworkRetCode(), kServerOverloadErr);
  EXPECT_EQ(fw.GetFuncRetCode(), 0);
  // The two-argument constructor is the framework form.
  Status two(-404, "no such user");
  EXPECT_EQ(two.GetFrameworkRetCode(), -404);
  EXPECT_EQ(two.GetFuncRetCode(), 0);
}

TEST(StatusTest, FrameworkRetCodes) {
  EXPECT_TRUE(IsFrameworkRetCode(kSuccess));
  EXPECT_TRUE(IsFrameworkRetCode(kServerNoFuncErr));
  EXPECT_TRUE(IsFrameworkRetCode(kClientReadFrameErr));
  EXPECT_TRUE(IsFrameworkRetCode(kUnknownErr));
  EXPECT_FALSE(IsFrameworkRetCode(-404));
  EXPECT_FALSE(IsFrameworkRetCode(404));
  EXPECT_FALSE(IsFrameworkRetCode(3));
}

TEST(StatusTest, Setters) {
  Status s;
  s.SetFrameworkRetCode(kClientInvokeTimeoutErr);
  s.SetErrorMessage("deadline exceeded");
  EXPECT_FALSE(s.OK());
  EXPECT_EQ(s.ToString(), "framework error 101 (invoke_timeout): deadline exceeded");
  s.SetFrameworkRetCode(kSuccess);
  EXPECT_TRUE(s.OK());
  EXPECT_EQ(s.ToString(), "OK");  // the message alone does not make an error
  s.SetFuncRetCode(-1);
  EXPECT_FALSE(s.OK());
  EXPECT_EQ(s.GetFuncRetCode(), -1);
}

TEST(StatusTest, RetCodeNames) {
  EXPECT_EQ(RetCodeName(kSuccess), "success");
  EXPECT_EQ(RetCodeName(kServerTimeoutErr), "server_timeout");
  EXPECT_EQ(RetCodeName(kClientNetworkErr), "network");
  EXPECT_EQ(RetCodeName(kUnknownErr), "unknown");
  EXPECT_EQ(RetCodeName(12345), "unknown");
  EXPECT_EQ(Status(12345, "x").ToString(), "framework error 12345 (unknown): x");
}

}  // namespace
}  // namespace trpc
