#include "trpc/transport/buffer_budget.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "test/transport/length_prefix_codec.h"
#include "test/transport/loopback.h"
#include "test/transport/reactor_thread.h"
#include "trpc/transport/connection.h"

namespace trpc::testing {
namespace {

constexpr uint64_t kLimit = 1u << 20;
constexpr size_t kReply = 128u << 10;

// Answers "big" with a kReply-byte frame and anything else with itself.
class BigReplyHandler : public Connection::Handler {
 public:
  void OnFrame(Connection* conn, ChainBuffer&& frame) override {
    std::string f = frame.ToString();
    ChainBuffer reply;
    reply.Append(f.substr(LengthPrefixCodec::kPrefixSize) == "big"
                     ? LengthPrefixCodec::Frame(std::string(kReply - 4, 'x'))
                     : f);
    conn->Send(std::move(reply));
  }
  void OnClose(Connection* conn, const std::string& reason) override {
    std::lock_guard lock(mu_);
    causes_.push_back(conn->close_cause());
  }
  std::vector<CloseCause> Causes() {
    std::lock_guard lock(mu_);
    return causes_;
  }

 private:
  std::mutex mu_;
  std::vector<CloseCause> causes_;
};

class BufferBudgetTest : public ::testing::Test {
 protected:
  // A budget of kLimit and two connections on one reactor counting against it.
  void SetUpBudget(int64_t timeout_ms) {
    budget_ = std::make_shared<BufferBudget>(kLimit, timeout_ms);
    slot_ = budget_->NewSlot(loop_.reactor(), this);
    for (int i = 0; i < 2; ++i) {
      pairs_[i] = MakeTcpPair();
      ASSERT_GE(pairs_[i].server_fd, 0);
      // Small kernel buffers, so that the replies pile up in the connection, not the kernel.
      int small = 64 << 10;
      ::setsockopt(pairs_[i].server_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
      ConnectionOptions options;
      options.budget = slot_;
      conns_[i] = loop_.Run([&] {
        auto c = std::make_shared<Connection>(loop_.reactor(), pairs_[i].server_fd,
                                              pairs_[i].client_addr, &codec_, &handler_, options);
        c->Start();
        return c;
      });
    }
  }
  void TearDown() override {
    loop_.Run([&] {
      for (auto& c : conns_) {
        if (c) c->Close("test over");
        c.reset();
      }
    });
    for (auto& p : pairs_) {
      if (p.client_fd >= 0) ::close(p.client_fd);
    }
  }
  bool BudgetPaused(int i) {
    return loop_.Run([&] { return conns_[i]->budget_paused(); });
  }
  bool Closed(int i) {
    return loop_.Run([&] { return conns_[i]->closed(); });
  }
  int64_t SlotBytes() {
    return loop_.Run([&] { return slot_->bytes(); });
  }
  // Connection 0's peer asks for `n` big replies and reads none of them.
  void Flood(int n) {
    std::string requests;
    for (int i = 0; i < n; ++i) requests += LengthPrefixCodec::Frame("big");
    ASSERT_TRUE(WriteAll(pairs_[0].client_fd, requests));
  }
  // Connection 1's peer: one echo round trip.
  bool EchoRoundTrip() {
    std::string ping = LengthPrefixCodec::Frame("ping");
    std::string got;
    return WriteAll(pairs_[1].client_fd, ping) &&
           ReadExactly(pairs_[1].client_fd, ping.size(), 5000, &got) == ReadStatus::kOk &&
           got == ping;
  }

  LengthPrefixCodec codec_;
  BigReplyHandler handler_;
  std::shared_ptr<BufferBudget> budget_;
  ReactorThread loop_;  // after the handler and the budget: stops before they go away
  BufferBudget::Slot* slot_ = nullptr;
  TcpPair pairs_[2];
  ConnectionPtr conns_[2];
};

TEST_F(BufferBudgetTest,
       OverTheLimitTheHeavyConnectionStopsTheOtherIsServedAndTheHeavyOneIsClosed) {
  SetUpBudget(/*timeout_ms=*/500);
  int64_t start = MonotonicMillis();
  Flood(64);  // 8 MiB of replies against a 1 MiB limit
  ASSERT_TRUE(WaitFor([&] { return BudgetPaused(0); }, 5000)) << "slot bytes " << SlotBytes();
  // Connection 0 stopped with a bounded overshoot: the limit + a step + one reply.
  EXPECT_LE(SlotBytes(), static_cast<int64_t>(kLimit + BufferBudget::kStep + kReply));
  EXPECT_GE(budget_->paused_total(), 1u);
  // The other connection is under its share: it keeps being answered.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(EchoRoundTrip()) << i;
  EXPECT_FALSE(BudgetPaused(1));
  // The heavy one stays over the limit (its peer reads nothing) and is closed after the
  // timeout, with a reset, counted.
  ASSERT_TRUE(WaitFor([&] { return Closed(0); }, 5000));
  EXPECT_GE(MonotonicMillis() - start, 500);  // (it paused after `start`)
  EXPECT_EQ(budget_->closed_over_limit(), 1u);
  ASSERT_EQ(handler_.Causes().size(), 1u);
  EXPECT_EQ(handler_.Causes()[0], CloseCause::kOverLimit);
  std::string ignored;
  EXPECT_TRUE(WaitForPeerClose(pairs_[0].client_fd, 5000, &ignored));
  // Its bytes are given back; the survivor still works.
  EXPECT_EQ(SlotBytes(), 0);
  EXPECT_LE(std::abs(budget_->total()), budget_->batch());
  EXPECT_EQ(budget_->connections(), 1u);
  EXPECT_TRUE(EchoRoundTrip());
}

TEST_F(BufferBudgetTest, APausedConnectionReadsAgainOnceItsPeerDrainsAndLosesNothing) {
  SetUpBudget(/*timeout_ms=*/60'000);
  constexpr int kRequests = 64;
  Flood(kRequests);
  ASSERT_TRUE(WaitFor([&] { return BudgetPaused(0); }, 5000)) << "slot bytes " << SlotBytes();
  // Reading the replies brings the connection under its allowance: the slot's timer resumes it
  // and every request is answered.
  std::string got;
  ASSERT_EQ(ReadExactly(pairs_[0].client_fd, kRequests * kReply, 20'000, &got), ReadStatus::kOk);
  EXPECT_EQ(got.size(), kRequests * kReply);
  EXPECT_FALSE(Closed(0));
  // (It may have paused again after handing up the last request: the timer lets it go.)
  EXPECT_TRUE(WaitFor([&] { return !BudgetPaused(0); }, 5000));
  EXPECT_EQ(budget_->closed_over_limit(), 0u);
  EXPECT_TRUE(WaitFor([&] { return SlotBytes() == 0; }, 5000));
}

// Without a budget the same flood is bounded only by max_pending_write_bytes: the connection
// never pauses for the budget (what the tests above rely on is the budget, not the defaults).
TEST_F(BufferBudgetTest, WithoutABudgetNothingPausesUnderTheConnectionLimit) {
  auto pair = MakeTcpPair();
  ASSERT_GE(pair.server_fd, 0);
  int small = 64 << 10;
  ::setsockopt(pair.server_fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  auto conn = loop_.Run([&] {
    auto c = std::make_shared<Connection>(loop_.reactor(), pair.server_fd, pair.client_addr,
                                          &codec_, &handler_, ConnectionOptions{});
    c->Start();
    return c;
  });
  std::string requests;
  for (int i = 0; i < 64; ++i) requests += LengthPrefixCodec::Frame("big");
  ASSERT_TRUE(WriteAll(pair.client_fd, requests));
  EXPECT_TRUE(WaitFor(
      [&] { return loop_.Run([&] { return conn->pending_write_bytes() > 4 * kLimit; }); }, 5000));
  EXPECT_FALSE(loop_.Run([&] { return conn->reading_paused(); }));
  loop_.Run([&] { conn->Close("test over"); });
  ::close(pair.client_fd);
}

// Stress (run under TSan): reactors add and remove bytes through their slots at once, a reader
// polls the shared figures, and the release timer posts trims to every reactor. No update of
// the shared total may be lost: it equals what the slots passed on.
TEST(BufferBudgetStressTest, SlotsOnManyReactorsKeepTheSharedTotalExact) {
  constexpr int kReactors = 4;
  constexpr int kRounds = 20000;
  auto budget = std::make_shared<BufferBudget>(8u << 20, 1000);
  std::vector<std::unique_ptr<ReactorThread>> loops;
  std::vector<BufferBudget::Slot*> slots;
  for (int i = 0; i < kReactors; ++i) {
    loops.push_back(std::make_unique<ReactorThread>());
    slots.push_back(budget->NewSlot(loops.back()->reactor(), &loops));
  }
  std::atomic<bool> done{false};
  std::thread reader([&] {
    uint64_t seen = 0;
    while (!done.load(std::memory_order_relaxed)) {
      seen += budget->Over() ? 1 : 0;
      seen += budget->Allowance() == UINT64_MAX ? 0 : 1;
      seen += budget->FairShare() + budget->releases();
    }
    EXPECT_GT(seen, 0u);
  });
  std::vector<std::thread> drivers;
  for (int i = 0; i < kReactors; ++i) {
    drivers.emplace_back([&, i] {
      std::mt19937 rng(static_cast<uint32_t>(i));
      for (int round = 0; round < kRounds; round += 1000) {
        loops[i]->Run([&] {
          // Up and down by up to 64 KiB, drifting up to several MiB (past the release mark)
          // and back to zero at the end of each run of rounds.
          int64_t held = 0;
          for (int k = 0; k < 1000; ++k) {
            int64_t delta = static_cast<int64_t>(rng() % (64u << 10)) - (24 << 10);
            if (held + delta < 0) delta = -held;
            slots[i]->Add(delta);
            held += delta;
          }
          slots[i]->Add(-held);
        });
      }
    });
  }
  for (auto& t : drivers) t.join();
  int64_t pushed = 0;
  for (int i = 0; i < kReactors; ++i) {
    pushed += loops[i]->Run([&] { return slots[i]->bytes() - slots[i]->unpushed(); });
    EXPECT_EQ(loops[i]->Run([&] { return slots[i]->bytes(); }), 0);
  }
  EXPECT_EQ(budget->total(), pushed);
  EXPECT_LE(std::abs(budget->total()), kReactors * budget->batch());
  // The totals rose past the release mark and fell back: a release ran (or is under way).
  EXPECT_TRUE(WaitFor([&] { return budget->releases() > 0; }, 5000));
  done = true;
  reader.join();
  budget->DropSlots(&loops);
}

}  // namespace
}  // namespace trpc::testing
