// Retries and hedging (detail::Attempts) against a fake host: a simulated clock and timers,
// attempts that wait until the test answers them, and a record of every attempt sent and
// cancelled. Each test checks one rule of docs/naming.md's retry and hedging sections.

#include "trpc/client/detail/attempts.h"

#include <gtest/gtest.h>

#include <map>

#include "trpc/base/clock.h"

namespace trpc::detail {
namespace {

constexpr int64_t kMs = kNanosPerMilli;

class FakeHost;

// One attempt as the fake host sends it: it waits until the test answers or cancels it.
struct FakeCall : OutgoingCall {
  FakeCall(FakeHost* h, std::shared_ptr<AttemptGroup> g) : host(h), group(std::move(g)) {}
  void OnReply(Status st, ChainBuffer&&) override;
  FakeHost* host;
  std::shared_ptr<AttemptGroup> group;
  int replies = 0;
};

class FakeHost : public AttemptHost {
 public:
  explicit FakeHost(size_t endpoints) {
    for (size_t i = 0; i < endpoints; ++i) {
      Endpoint e;
      NetAddress::FromIpPort("127.0.0.1", static_cast<uint16_t>(9000 + i), &e.addr);
      backends.push_back(std::make_shared<Backend>(e, nullptr, 0));
    }
  }

  int64_t Now() override { return now; }
  bool Stopped() override { return stopped; }
  bool RefusesExtraAttempt(int64_t) override { return refuse_extra; }
  std::shared_ptr<OutgoingCall> PrepareAttempt(const std::shared_ptr<AttemptGroup>& group, int64_t,
                                               Status* st) override {
    if (fail_prepare) {
      *st = Status(kClientRouterErr, "no endpoint");
      return nullptr;
    }
    auto call = std::make_shared<FakeCall>(this, group);
    // Like ChooseBackend: the first endpoint not tried yet, else the first.
    call->backend = backends[0];
    for (const auto& b : backends) {
      if (std::find(group->tried.begin(), group->tried.end(), b) == group->tried.end()) {
        call->backend = b;
        break;
      }
    }
    return call;
  }
  void SendAttempt(AttemptGroup&, std::shared_ptr<OutgoingCall> call) override {
    auto c = std::static_pointer_cast<FakeCall>(call);
    sent.push_back(c);
    in_flight.push_back(c);
  }
  void CancelAttempt(OutgoingCall& call) override {
    for (size_t i = 0; i < in_flight.size(); ++i) {
      if (in_flight[i].get() == &call) {
        cancelled.push_back(in_flight[i]);
        Answer(i, Status(kClientCanceledErr, "cancelled"));
        return;
      }
    }
  }
  TimerId AddTimer(AttemptGroup&, int64_t at_ns, std::function<void()> fn) override {
    timers[++next_timer] = {at_ns, std::move(fn)};
    return next_timer;
  }
  void CancelTimer(AttemptGroup&, TimerId id) override { timers.erase(id); }

  // Moves the clock by `ns`, running the timers due on the way, in order.
  void Advance(int64_t ns) {
    const int64_t until = now + ns;
    for (;;) {
      auto due = timers.end();
      for (auto it = timers.begin(); it != timers.end(); ++it) {
        if (it->second.first <= until &&
            (due == timers.end() || it->second.first < due->second.first)) {
          due = it;
        }
      }
      if (due == timers.end()) break;
      now = std::max(now, due->second.first);
      auto fn = std::move(due->second.second);
      timers.erase(due);
      fn();
    }
    now = until;
  }
  // Ends the in-flight attempt `i` (in the order sent) with `st`.
  void Answer(size_t i, const Status& st) {
    std::shared_ptr<FakeCall> c = in_flight.at(i);
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(i));
    c->OnReply(st, ChainBuffer());
  }
  // The earliest timer's time, or -1.
  int64_t NextTimer() const {
    int64_t at = -1;
    for (const auto& [id, t] : timers) at = at < 0 ? t.first : std::min(at, t.first);
    return at;
  }

  Attempts* attempts = nullptr;
  int64_t now = 1000 * kNanosPerSecond;
  bool stopped = false;
  bool refuse_extra = false;
  bool fail_prepare = false;
  std::vector<BackendPtr> backends;
  std::vector<std::shared_ptr<FakeCall>> sent;
  std::vector<std::shared_ptr<FakeCall>> in_flight;
  std::vector<std::shared_ptr<FakeCall>> cancelled;
  std::map<TimerId, std::pair<int64_t, std::function<void()>>> timers;
  TimerId next_timer = 0;
};

void FakeCall::OnReply(Status st, ChainBuffer&&) {
  ++replies;
  host->attempts->OnAttemptDone(group, *this, st);
}

// A call's outcome as its caller sees it.
struct Outcome {
  int calls = 0;
  Status status;
};

class AttemptsTest : public ::testing::Test {
 protected:
  // Retries on "*" by default, with a budget that never runs out.
  void Make(size_t endpoints = 3) {
    config_.retry.budget_percent = 100;
    config_.retry.budget_min = 100000;
    host_ = std::make_unique<FakeHost>(endpoints);
    attempts_ = std::make_unique<Attempts>(config_, host_.get(), 1);
    host_->attempts = attempts_.get();
  }
  std::shared_ptr<AttemptGroup> Start(int64_t deadline_ns = 0) {
    auto g = attempts_->NewGroup("/pkg.Svc/Do", host_->now);
    g->ctx = MakeClientContext();
    g->done = [this](const Status& st) {
      ++outcome_.calls;
      outcome_.status = st;
    };
    g->deadline_ns = deadline_ns;
    attempts_->Begin(g);
    return g;
  }

  ClientServiceConfig config_;
  std::unique_ptr<FakeHost> host_;
  std::unique_ptr<Attempts> attempts_;
  Outcome outcome_;
};

const Status kConnectFailed(kClientConnectErr, "connect refused");
const Status kTimedOut(kClientInvokeTimeoutErr, "timeout");

TEST_F(AttemptsTest, MethodsNamedByWireNameBareNameOrStar) {
  config_.retry.methods = {"/pkg.Svc/Do", "Other"};
  Make();
  EXPECT_TRUE(attempts_->Covers("/pkg.Svc/Do"));
  EXPECT_TRUE(attempts_->Covers("/x.Y/Other"));
  EXPECT_FALSE(attempts_->Covers("/pkg.Svc/Undo"));
  config_.retry.methods = {};
  config_.hedging.methods = {"*"};
  Make();
  EXPECT_TRUE(attempts_->Covers("/anything/At"));
  config_.hedging.methods = {};
  Make();
  EXPECT_FALSE(attempts_->Covers("/pkg.Svc/Do"));
}

TEST_F(AttemptsTest, RetriesARetryableFailureOnAnotherEndpointUpToMaxAttempts) {
  config_.retry.methods = {"*"};
  config_.retry.max_attempts = 3;
  Make();
  Start();
  ASSERT_EQ(host_->sent.size(), 1u);
  for (int attempt = 1; attempt < 3; ++attempt) {
    host_->Answer(0, kConnectFailed);
    EXPECT_EQ(outcome_.calls, 0) << "ended after attempt " << attempt;
    host_->Advance(200 * kMs);  // past any back-off
    ASSERT_EQ(host_->sent.size(), static_cast<size_t>(attempt + 1));
  }
  host_->Answer(0, kConnectFailed);
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientConnectErr);
  // Each attempt went to an endpoint not tried before.
  EXPECT_NE(host_->sent[0]->backend, host_->sent[1]->backend);
  EXPECT_NE(host_->sent[1]->backend, host_->sent[2]->backend);
  EXPECT_NE(host_->sent[0]->backend, host_->sent[2]->backend);
  host_->Advance(kNanosPerSecond);
  EXPECT_EQ(host_->sent.size(), 3u);
}

TEST_F(AttemptsTest, ASuccessfulRetryWinsAndNamesItsEndpoint) {
  config_.retry.methods = {"*"};
  Make();
  auto g = Start();
  host_->Answer(0, Status(kClientNetworkErr, "connection lost"));
  host_->Advance(200 * kMs);
  ASSERT_EQ(host_->sent.size(), 2u);
  host_->Answer(0, Status());
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_TRUE(outcome_.status.OK());
  EXPECT_EQ(g->ctx->GetBackend().ToString(), host_->sent[1]->backend->name);
}

TEST_F(AttemptsTest, FailuresNotRetryableEndTheCallAtOnce) {
  config_.retry.methods = {"*"};
  Make();
  Start();
  host_->Answer(0, kTimedOut);  // a timeout may have been executed: not repeated by default
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientInvokeTimeoutErr);
  host_->Advance(kNanosPerSecond);
  EXPECT_EQ(host_->sent.size(), 1u);
}

TEST_F(AttemptsTest, ConfiguredCodesAreRetried) {
  config_.retry.methods = {"*"};
  config_.retry.codes = {kServerSystemErr};
  Make();
  Start();
  host_->Answer(0, Status(kServerSystemErr, "inner failure"));
  host_->Advance(200 * kMs);
  EXPECT_EQ(host_->sent.size(), 2u);
  EXPECT_EQ(outcome_.calls, 0);
}

TEST_F(AttemptsTest, BackOffIsJitteredBelowADoublingCap) {
  config_.retry.methods = {"*"};
  config_.retry.max_attempts = 5;
  config_.retry.backoff_base = 4;
  config_.retry.backoff_max = 10;
  Make();
  Start();
  const int64_t caps[] = {4 * kMs, 8 * kMs, 10 * kMs, 10 * kMs};
  for (int64_t cap : caps) {
    const int64_t failed_at = host_->now;
    host_->Answer(0, kConnectFailed);
    ASSERT_EQ(host_->in_flight.size(), 0u);
    int64_t at = host_->NextTimer();
    if (at < 0) {
      // A zero wait (the jitter's lower end) starts the retry at once.
      ASSERT_EQ(host_->in_flight.size(), 1u);
    } else {
      EXPECT_GE(at, failed_at);
      EXPECT_LT(at, failed_at + cap);
      host_->Advance(at - host_->now);
    }
    ASSERT_EQ(host_->in_flight.size(), 1u) << "cap " << cap;
  }
}

TEST_F(AttemptsTest, AnEmptyBudgetStopsRetries) {
  config_.retry.methods = {"*"};
  Make();
  // Rebuilt with a budget of 1% and no minimum: one call earns a hundredth of a retry.
  config_.retry.budget_percent = 1;
  config_.retry.budget_min = 0;
  attempts_ = std::make_unique<Attempts>(config_, host_.get(), 1);
  host_->attempts = attempts_.get();
  Start();
  host_->Answer(0, kConnectFailed);
  host_->Advance(kNanosPerSecond);
  EXPECT_EQ(host_->sent.size(), 1u);
  EXPECT_EQ(outcome_.calls, 1);
}

TEST_F(AttemptsTest, NoRetryPastTheDeadline) {
  config_.retry.methods = {"*"};
  Make();
  Start(host_->now + 50 * kMs);
  host_->Advance(60 * kMs);
  host_->Answer(0, kConnectFailed);
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientConnectErr);
  EXPECT_EQ(host_->sent.size(), 1u);
}

TEST_F(AttemptsTest, TheThrottleRefusesExtraAttemptsAndTheCallKeepsItsFailure) {
  config_.retry.methods = {"*"};
  Make();
  Start();
  host_->refuse_extra = true;
  host_->Answer(0, kConnectFailed);
  host_->Advance(200 * kMs);
  EXPECT_EQ(host_->sent.size(), 1u);
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientConnectErr);
}

TEST_F(AttemptsTest, HedgeGoesAfterTheDelayAndTheLoserIsCancelled) {
  config_.hedging.methods = {"*"};
  config_.hedging.delay = 10;
  config_.hedging.max_attempts = 2;
  Make();
  Start();
  ASSERT_EQ(host_->sent.size(), 1u);
  host_->Advance(9 * kMs);
  EXPECT_EQ(host_->sent.size(), 1u);
  host_->Advance(1 * kMs);
  ASSERT_EQ(host_->sent.size(), 2u);
  EXPECT_NE(host_->sent[0]->backend, host_->sent[1]->backend);
  host_->Answer(1, Status());  // the hedge answers first
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_TRUE(outcome_.status.OK());
  ASSERT_EQ(host_->cancelled.size(), 1u);
  EXPECT_EQ(host_->cancelled[0], host_->sent[0]);
  EXPECT_EQ(host_->sent[0]->replies, 1);
  EXPECT_TRUE(host_->in_flight.empty());
  host_->Advance(kNanosPerSecond);
  EXPECT_EQ(host_->sent.size(), 2u);
  EXPECT_EQ(outcome_.calls, 1);
}

TEST_F(AttemptsTest, NoHedgeWhenTheReplyComesFirst) {
  config_.hedging.methods = {"*"};
  config_.hedging.delay = 10;
  Make();
  Start();
  host_->Advance(5 * kMs);
  host_->Answer(0, Status());
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_TRUE(host_->timers.empty());
  host_->Advance(kNanosPerSecond);
  EXPECT_EQ(host_->sent.size(), 1u);
}

TEST_F(AttemptsTest, ARetryableFailureStartsTheNextHedgeAtOnce) {
  config_.hedging.methods = {"*"};
  config_.hedging.delay = 50;
  config_.hedging.max_attempts = 3;
  Make();
  Start();
  host_->Advance(1 * kMs);
  host_->Answer(0, kConnectFailed);
  EXPECT_EQ(host_->sent.size(), 2u);
  EXPECT_EQ(outcome_.calls, 0);
  // The failure of a hedge while another is in flight waits for that one.
  host_->Advance(50 * kMs);
  ASSERT_EQ(host_->sent.size(), 3u);
  host_->Answer(0, kConnectFailed);
  EXPECT_EQ(outcome_.calls, 0);
  host_->Answer(0, Status(kServerOverloadErr, "overloaded"));
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kServerOverloadErr);
}

TEST_F(AttemptsTest, HedgeDelayZeroFollowsTheObservedP95) {
  config_.hedging.methods = {"*"};
  config_.hedging.delay = 0;
  Make();
  ASSERT_TRUE(attempts_->tracks_latency());
  // Until there are samples: the default 10 ms.
  EXPECT_EQ(attempts_->NewGroup("/a/b", host_->now)->hedge_delay_ns, 10 * kMs);
  for (int i = 0; i < 100; ++i) attempts_->OnLatency(host_->now, 2 * kMs);
  int64_t delay = attempts_->NewGroup("/a/b", host_->now)->hedge_delay_ns;
  EXPECT_GE(delay, 2 * kMs);
  EXPECT_LT(delay, 4 * kMs);
}

TEST_F(AttemptsTest, StopEndsACallWaitingForItsBackOff) {
  config_.retry.methods = {"*"};
  config_.retry.backoff_base = 1000;
  config_.retry.backoff_max = 1000;
  Make();
  Start();
  host_->Answer(0, kConnectFailed);
  if (host_->in_flight.empty()) {  // unless the jitter drew a zero wait
    ASSERT_EQ(host_->timers.size(), 1u);
    host_->stopped = true;
    attempts_->StopOnLoop(0);
    EXPECT_EQ(outcome_.calls, 1);
    EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientNetworkErr);
    EXPECT_TRUE(host_->timers.empty());
    host_->Advance(2 * kNanosPerSecond);
    EXPECT_EQ(host_->sent.size(), 1u);
    EXPECT_EQ(outcome_.calls, 1);
  }
}

TEST_F(AttemptsTest, AnAttemptThatCannotGoEndsTheCallWithTheEarlierFailure) {
  config_.retry.methods = {"*"};
  Make();
  Start();
  host_->fail_prepare = true;
  host_->Answer(0, kConnectFailed);
  host_->Advance(200 * kMs);
  EXPECT_EQ(outcome_.calls, 1);
  EXPECT_EQ(outcome_.status.GetFrameworkRetCode(), kClientConnectErr);
}

}  // namespace
}  // namespace trpc::detail
