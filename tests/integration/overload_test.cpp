// The hybrid scheduler under overload (issue 4): urgent work stays fast
// while a batch backlog still completes (against arbiter-sim: figures
// compared within one run, ratios between classes, never against absolute
// times, so a slow machine shifts both sides alike), and a tenant that
// floods the pool does not slow another tenant down (against a fake engine
// that records the gateway's dispatch order: dispatches counted, not timed).
#include <boost/json.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
#include "support/fake_upstream.hpp"
#include "support/gateway_config.hpp"
#include "support/gateway_process.hpp"
#include "support/harness.hpp"  // describe_output

namespace arbiter::test {
namespace {

double queue_ms(const HttpResponse& r) {
  const auto h = r.header("x-arbiter-queue-ms");
  return h ? std::stod(*h) : -1;
}

// Nearest-rank percentile of a copy.
double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::max<std::size_t>(rank, 1) - 1];
}

TEST(Overload, RealtimeWaitStaysLowWhileTheBatchBacklogCompletes) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 4;
  config.alpha_classes = "[realtime, batch, chat]";  // realtime outranks the default: granted
  config.extra =
      "classes:\n"
      "  - {name: realtime, min_share: 0.25, weight: 4}\n"
      "  - {name: batch, preemptible: true, max_queue_wait_ms: 600000}\n"
      "  - {name: chat}\n"
      // Realtime preempts after 50 ms of waiting, not the default second.
      "scheduler: {preempt_after_ms: 50}\n";
  GatewayProcess gateway(config.to_yaml());

  constexpr int kBatch = 12;  // three times the pool: a backlog
  // Long enough (~1.2 s each at the sim's ~12 ms steps) that a realtime
  // request waiting for one to end would wait far longer than a preemption
  // takes to land, however slow the machine's CPU scheduling is that day.
  constexpr int kBatchTokens = 100;
  const std::string batch_body = R"({"model":"m1","prompt":"Summarise the quarter.","max_tokens":)" +
                                 std::to_string(kBatchTokens) + R"(,"min_tokens":)" + std::to_string(kBatchTokens) +
                                 "}";
  std::vector<std::future<HttpResponse>> batch;
  for (int i = 0; i < kBatch; ++i) {
    batch.push_back(std::async(std::launch::async, [&] {
      return http_call(gateway.port(), gateway_post("/v1/completions", batch_body, kAlphaKey, "batch"),
                       Millis(60'000));
    }));
  }
  ASSERT_GE(sim.wait_for_metric("vllm:num_requests_running", [](double v) { return v >= 4; }, Millis(5'000)), 4)
      << describe_output(gateway);

  std::vector<double> realtime_waits;
  for (int i = 0; i < 8; ++i) {
    const HttpResponse r = http_call(
        gateway.port(), gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":4,"min_tokens":4)", "Risk check", "m1"),
                                     kAlphaKey, "realtime"));
    ASSERT_EQ(r.status, 200) << r.body;
    realtime_waits.push_back(queue_ms(r));
    std::this_thread::sleep_for(Millis(100));
  }

  std::vector<double> batch_waits;
  int waited_for_capacity = 0;
  for (auto& f : batch) {
    const HttpResponse r = f.get();
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.json().at("usage").at("completion_tokens"), kBatchTokens) << "a preempted batch request lost tokens";
    batch_waits.push_back(queue_ms(r));
    // Batch requests beyond the 4 slots waited for a slot, and say so.
    if (queue_ms(r) > 100) {
      EXPECT_EQ(r.header("x-arbiter-wait-reason").value_or("(none)"), "capacity");
      ++waited_for_capacity;
    }
  }
  EXPECT_GE(waited_for_capacity, kBatch - 4 - 1);
  // Counted by the metrics observer once the answer has gone out: the
  // client may read its last answer before the counter is updated.
  const double capacity_waits =
      gateway
          .wait_for_metric("arbiter_queue_waits_total", [&](double v) { return v >= waited_for_capacity; },
                           Millis(5'000), {{"class", "batch"}, {"reason", "capacity"}})
          .value_or(0);
  EXPECT_GE(capacity_waits, waited_for_capacity);
  const double realtime_median = percentile(realtime_waits, 50);
  const double realtime_worst = percentile(realtime_waits, 100);
  const double batch_median = percentile(batch_waits, 50);
  RecordProperty("realtime_median_queue_ms", std::to_string(realtime_median));
  RecordProperty("realtime_max_queue_ms", std::to_string(realtime_worst));
  RecordProperty("batch_median_queue_ms", std::to_string(batch_median));
  // The backlog makes the median batch request wait for whole requests
  // ahead of it; realtime waits for a preemption to land (50 ms), where
  // without one it would wait for a batch request to finish. Medians on
  // both sides: the worst of 8 realtime waits is one CPU-scheduling hiccup
  // away on a shared machine (it failed a full-suite run under load).
  EXPECT_LT(realtime_median * 4, batch_median)
      << "realtime median " << realtime_median << " ms (max " << realtime_worst << ") vs batch median "
      << batch_median << " ms";
}

// Closed-loop clients of one tenant: `clients` requests outstanding at all
// times until stopped, each with its own prompt ("<name> <n>"), so the
// engine's record of arrivals says whose request it was. While measuring,
// each request's prompt and its time in the gateway's queue are kept.
class TenantLoad {
 public:
  struct Sent {
    std::string prompt;
    double queue_ms = -1;  // x-arbiter-queue-ms; -1: no answer
  };
  TenantLoad(uint16_t port, std::string key, std::string name, int clients) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, port, key, name] {
        while (!stop_) {
          const std::string prompt = name + " " + std::to_string(next_++);
          bool ok = false;
          double queued = -1;
          try {
            const HttpResponse r = http_call(
                port, gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":40)", prompt, "m1"), key, "chat"),
                Millis(60'000));
            ok = r.status == 200;
            queued = queue_ms(r);
          } catch (const std::exception&) {  // counted as an error, not thrown out of the thread
          }
          std::lock_guard lock(mu_);
          if (!ok) ++errors_;
          if (measuring_) sent_.push_back({prompt, queued});
        }
      });
    }
  }
  ~TenantLoad() { stop(); }
  void measure(bool on) {
    std::lock_guard lock(mu_);
    measuring_ = on;
  }
  void stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
    threads_.clear();
  }
  std::vector<Sent> sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }
  int errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> next_{0};
  std::mutex mu_;
  bool measuring_ = false;
  std::vector<Sent> sent_;
  int errors_ = 0;
  std::vector<std::thread> threads_;
};

// The prompt a request recorded by the fake engine carried ("" if none).
std::string prompt_of(const RecordedRequest& r) {
  try {
    return std::string(boost::json::parse(r.body).at("messages").at(0).at("content").as_string());
  } catch (const std::exception&) {
    return "";
  }
}

TEST(Overload, ATenantSendingTenTimesItsShareDoesNotRaiseAnothersWait) {
  // A fake engine answering each request 400-700 ms after it arrives
  // (varied, so that the slots do not all free at once), and recording
  // arrivals in order: the order in which the gateway dispatched.
  FakeUpstream engine(2);
  auto served = std::make_shared<std::atomic<int>>(0);
  engine.set_handler([served](const RecordedRequest&) {
    Respond r;
    r.body = chat_completion_body();
    r.header_delay = Millis(400 + (served->fetch_add(1) * 137) % 300);
    return Behaviour(r);
  });
  GatewayConfig config;
  config.backend_ports = {engine.port()};
  config.max_concurrency = 4;  // each tenant's fair share: 2 slots
  config.threads = 2;
  config.extra =
      "classes:\n"
      "  - {name: chat, max_queue_wait_ms: 600000}\n"
      "default_class: chat\n";
  GatewayProcess gateway(config.to_yaml());

  // alpha keeps 20 requests outstanding (ten times its share of the 4
  // slots), beta its share (2). Fair queuing serves beta at the next slot to
  // free; FIFO would queue it behind the ~16 of alpha's already waiting.
  // Counted, not timed: for each of beta's requests, how many of alpha's
  // the gateway dispatched while beta's waited in its queue (the engine's
  // arrival order, from beta's arrival in the queue, its dispatch less its
  // x-arbiter-queue-ms, to its own dispatch): 0 to 4 seen (2-3 typical,
  // the same with the other core busy), where FIFO dispatches the 16-17 of
  // alpha's already waiting first (checked with `scheduler: {policy: fifo}`:
  // this test fails).
  TenantLoad alpha(gateway.port(), kAlphaKey, "alpha", 20);
  TenantLoad beta(gateway.port(), kBetaKey, "beta", 2);
  // alpha's queue builds up: waited for, not slept.
  ASSERT_GE(gateway
                .wait_for_metric("arbiter_queue_depth", [](double v) { return v >= 12; }, Millis(30'000),
                                 {{"class", "chat"}})
                .value_or(0),
            12)
      << describe_output(gateway);
  beta.measure(true);
  constexpr std::size_t kSamples = 24;
  const auto deadline = Clock::now() + Millis(120'000);
  while (beta.sent().size() < kSamples + 2 && Clock::now() < deadline) std::this_thread::sleep_for(Millis(50));
  // Beta's answers in: its last two requests may still be queued.
  beta.stop();
  const auto beta_sent = beta.sent();
  const auto arrivals = engine.requests();
  alpha.stop();
  EXPECT_EQ(alpha.errors() + beta.errors(), 0);
  ASSERT_GE(beta_sent.size(), kSamples);

  std::vector<int> alpha_first;  // per beta request
  std::string detail;
  for (const auto& b : beta_sent) {
    const auto own = std::find_if(arrivals.begin(), arrivals.end(),
                                  [&](const RecordedRequest& r) { return prompt_of(r) == b.prompt; });
    if (own == arrivals.end()) {
      detail += b.prompt + ": never reached the engine\n";
      alpha_first.push_back(1'000);
      continue;
    }
    const TimePoint queued_at =
        own->received_at - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(b.queue_ms));
    const auto ahead = std::count_if(arrivals.begin(), own, [&](const RecordedRequest& r) {
      return r.received_at > queued_at && prompt_of(r).starts_with("alpha ");
    });
    alpha_first.push_back(static_cast<int>(ahead));
    detail += b.prompt + " (queued " + std::to_string(b.queue_ms) + " ms): " + std::to_string(ahead) +
              " of alpha's dispatched first\n";
  }
  const int worst = *std::max_element(alpha_first.begin(), alpha_first.end());
  RecordProperty("beta_worst_alpha_dispatched_first", std::to_string(worst));
  // Half of what FIFO gives at the most: two rounds of the 4 slots, the
  // leeway the timed version of this test allowed (two service times).
  EXPECT_LE(worst, 8) << detail << describe_output(gateway);
}

}  // namespace
}  // namespace arbiter::test
