// Overload control end to end (fault_server in a child process, both thread models):
// max_concurrency refuses what is beyond the limit at once, with ret 22, while the admitted
// calls run; and under a closed loop of callers twice as many as the server can keep within
// their deadline, a fixed limit and the adaptive one keep the admitted calls within it, where
// no limit lets them time out. Assertions are on outcomes (codes, order), not on speed.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <latch>
#include <mutex>
#include <string>
#include <vector>

#include "test/fault/fault_test_util.h"
#include "test/fault/raw_trpc_client.h"
#include "trpc/base/clock.h"

namespace trpc::test::fault {
namespace {

class OverloadTest : public FaultTest {};

TEST_F(OverloadTest, FixedLimitRefusesBeyondItAtOnceWhileTheAdmittedRun) {
  ChildServer server;
  FaultServerOptions o;
  // The admitted calls take 1.6 s one after another in the merged model: a deadline beyond.
  o.service_yaml = "      max_concurrency: 4\n      timeout: 10000\n";
  std::string addr = StartFaultServer(&server, o);
  ASSERT_FALSE(addr.empty());
  RawTrpcClient raw(addr);
  ASSERT_TRUE(raw.connected());
  // Twelve calls in one write: the server reads them in one pass.
  std::string burst;
  for (uint32_t id = 1; id <= 12; ++id) burst += raw.Encode(id, "sleep:400000");
  auto sent = std::chrono::steady_clock::now();
  ASSERT_TRUE(raw.Write(burst));
  std::map<uint32_t, RawReply> replies;
  ASSERT_TRUE(raw.Read(12, 20'000, &replies));
  ASSERT_EQ(replies.size(), 12u);
  int ok = 0, refused = 0;
  auto last_refusal = sent, first_ok = sent + std::chrono::hours(1);
  for (const auto& [id, r] : replies) {
    if (r.ret == 0) {
      ++ok;
      first_ok = std::min(first_ok, r.at);
    } else {
      EXPECT_EQ(r.ret, kServerOverloadErr) << r.msg;
      ++refused;
      last_refusal = std::max(last_refusal, r.at);
    }
  }
  EXPECT_EQ(ok, 4);
  EXPECT_EQ(refused, 8);
  // Refused at once: before the first admitted call (400 ms of sleep) has finished, in both
  // models (the merged model runs admitted handlers after the pass's reads).
  EXPECT_LT(last_refusal, first_ok);
  // Everything answered: the limit admits again.
  std::map<uint32_t, RawReply> more;
  ASSERT_TRUE(raw.Write(raw.Encode(100, "after")));
  ASSERT_TRUE(raw.Read(1, 10'000, &more));
  ASSERT_EQ(more.count(100), 1u);
  EXPECT_EQ(more[100].ret, 0) << more[100].msg;
}

constexpr int64_t kSlotNanos = 100 * kNanosPerMilli;

struct LoopOutcome {
  uint64_t ok = 0;
  uint64_t refused = 0;   // ret 22
  uint64_t timeouts = 0;  // client timeout (101) or server-side deadline (21)
  uint64_t other = 0;
  // Timeouts by the kSlotNanos slot in which they came, from the start of the measured part
  // (the calls that started in it end up to a timeout later; a later one counts in the last).
  std::vector<uint64_t> timeouts_by_slot;

  // Slots with more than `most` timeouts.
  size_t SlotsWithTimeoutsAbove(uint64_t most) const {
    return std::count_if(timeouts_by_slot.begin(), timeouts_by_slot.end(),
                         [most](uint64_t n) { return n > most; });
  }
  std::string SlotsText() const {
    std::string text;
    for (uint64_t n : timeouts_by_slot) text += (text.empty() ? "" : " ") + std::to_string(n);
    return text;
  }
};

// `callers` callers, each calling again as soon as its call ends, for `seconds`; counts the
// outcomes of calls that started in the last `measured_seconds`.
LoopOutcome ClosedLoop(GreeterServiceProxy* proxy, const std::string& msg, int callers,
                       double seconds, double measured_seconds, uint32_t timeout_ms) {
  std::mutex mu;
  LoopOutcome out;
  int64_t start = MonotonicNanos();
  int64_t end = start + static_cast<int64_t>(seconds * 1e9);
  int64_t measure_from = end - static_cast<int64_t>(measured_seconds * 1e9);
  const int64_t span = end - measure_from + timeout_ms * kNanosPerMilli;
  out.timeouts_by_slot.resize((span + kSlotNanos - 1) / kSlotNanos);
  std::latch done(callers);
  std::function<void()> call_once;
  call_once = [&] {
    int64_t t = MonotonicNanos();
    if (t >= end) {
      done.count_down();
      return;
    }
    auto ctx = MakeClientContext();
    ctx->SetTimeout(timeout_ms);
    HelloRequest req;
    req.set_msg(msg);
    proxy->AsyncSayHello(ctx, req).Then([&, t](Future<HelloReply>&& f) {
      if (t >= measure_from) {
        std::lock_guard lock(mu);
        if (f.IsReady()) {
          ++out.ok;
        } else {
          int ret = f.GetException().GetFrameworkRetCode();
          if (ret == kServerOverloadErr) {
            ++out.refused;
          } else if (ret == kClientInvokeTimeoutErr || ret == kServerTimeoutErr) {
            ++out.timeouts;
            size_t slot = static_cast<size_t>((MonotonicNanos() - measure_from) / kSlotNanos);
            ++out.timeouts_by_slot[std::min(slot, out.timeouts_by_slot.size() - 1)];
          } else {
            ++out.other;
          }
        }
      }
      call_once();
    });
  };
  for (int i = 0; i < callers; ++i) call_once();
  done.wait();
  return out;
}

// 2 ms of CPU per call, 200 callers, 150 ms deadline: with no limit every call waits for ~400 ms
// of work ahead of it. A limit must keep the admitted ones within the deadline. A loaded machine
// that does not run the server (or the client) for longer than the deadline times out every
// call in flight at that moment, up to all 200 callers' at once; one that runs the server only
// now and then for a while times out the few admitted calls, slot after slot. A queue times out
// a good part of the callers in most slots. So the check is on when many calls time out, not
// how many do: more than a quarter of the callers in a 100 ms slot of the measured 1.5 s may
// happen in a few slots (stalls), not in most of them (a queue).
class OverloadLimitTest : public OverloadTest, public ::testing::WithParamInterface<const char*> {};

TEST_P(OverloadLimitTest, AdmittedCallsKeepTheirDeadlineUnderTwiceTheLoad) {
  std::string limit = GetParam();
  ChildServer server;
  FaultServerOptions o;
  if (limit != "none") o.service_yaml = "      max_concurrency: " + limit + "\n";
  std::string addr = StartFaultServer(&server, o);
  ASSERT_FALSE(addr.empty());
  auto proxy = Proxy(addr);
  // 3 s of load; the adaptive limit starts high and has the first 1.5 s to come down.
  constexpr int kCallers = 200;
  LoopOutcome r = ClosedLoop(proxy.get(), "spin:2000", kCallers, 3.0, 1.5, 150);
  SCOPED_TRACE("limit " + limit + ": ok " + std::to_string(r.ok) + ", refused " +
               std::to_string(r.refused) + ", timed out " + std::to_string(r.timeouts) +
               ", other " + std::to_string(r.other) +
               "; timeouts by 100 ms slot: " + r.SlotsText());
  std::printf("limit %s: ok %lu, refused %lu, timed out %lu (by 100 ms slot: %s)\n", limit.c_str(),
              static_cast<unsigned long>(r.ok), static_cast<unsigned long>(r.refused),
              static_cast<unsigned long>(r.timeouts), r.SlotsText().c_str());
  const size_t slots = r.timeouts_by_slot.size();
  const size_t crowded = r.SlotsWithTimeoutsAbove(kCallers / 4);
  EXPECT_EQ(r.other, 0u);
  if (limit == "none") {
    // The contrast: nothing refused, and the queue makes calls miss their deadline.
    EXPECT_EQ(r.refused, 0u);
    EXPECT_GT(r.timeouts, r.ok);
    EXPECT_GT(crowded, slots / 4);
  } else {
    EXPECT_GT(r.refused, 0u);
    EXPECT_GT(r.ok, 0u);
    // A few stalls of a loaded machine may time calls out; a queue would make it the rule.
    EXPECT_LE(crowded, slots / 4);
  }
}

INSTANTIATE_TEST_SUITE_P(Limits, OverloadLimitTest, ::testing::Values("none", "4", "auto"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace trpc::test::fault
