// The hybrid scheduler under overload, against arbiter-sim (issue 4): urgent
// work stays fast while a batch backlog still completes, and a tenant that
// floods the pool does not slow another tenant down. Figures are compared
// within one run (ratios between classes or between phases), never against
// absolute times, so a slow machine shifts both sides alike.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/sim_harness.hpp"
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
// times until stopped. While measuring, each answer's gateway queue wait and
// its service time (the rest of its round trip) are kept.
class TenantLoad {
 public:
  TenantLoad(uint16_t port, std::string key, int clients) {
    for (int i = 0; i < clients; ++i) {
      threads_.emplace_back([this, port, key] {
        while (!stop_) {
          const auto sent = Clock::now();
          const HttpResponse r = http_call(
              port, gateway_post("/v1/chat/completions", sim_chat(R"("max_tokens":40,"min_tokens":40)", "Draft a reply.", "m1"),
                                 key, "chat"),
              Millis(60'000));
          const double round_trip_ms = std::chrono::duration<double, std::milli>(Clock::now() - sent).count();
          std::lock_guard lock(mu_);
          if (r.status != 200) ++errors_;
          if (measuring_) {
            waits_.push_back(queue_ms(r));
            service_.push_back(round_trip_ms - queue_ms(r));
          }
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
  std::vector<double> waits() {
    std::lock_guard lock(mu_);
    return waits_;
  }
  std::vector<double> service_times() {
    std::lock_guard lock(mu_);
    return service_;
  }
  int errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  bool measuring_ = false;
  std::vector<double> waits_;
  std::vector<double> service_;
  int errors_ = 0;
  std::vector<std::thread> threads_;
};

TEST(Overload, ATenantSendingTenTimesItsShareDoesNotRaiseAnothersWait) {
  SimProcess sim({"--profile", "llama-8b-a100", "--model", "m1"});
  GatewayConfig config;
  config.backend_ports = {sim.port()};
  config.max_concurrency = 4;  // each tenant's fair share: 2 slots
  config.threads = 2;
  config.extra =
      "classes:\n"
      "  - {name: chat, max_queue_wait_ms: 600000}\n"
      "default_class: chat\n";
  GatewayProcess gateway(config.to_yaml());

  // alpha keeps 20 requests outstanding (ten times its share of the 4
  // slots), beta its share (2). Fair queuing serves beta at the next slot to
  // free, so beta never waits longer than one request takes to run; FIFO
  // would queue it behind ~18 of alpha's, about 4-5 service times. The
  // bound is a ratio to the service time measured in this run, so a slow
  // machine moves both sides. (It compared two P99s of 16 waits before:
  // beta's waits are bimodal, 0 or up to one service time, so which side
  // caught a long one decided the verdict.)
  TenantLoad alpha(gateway.port(), kAlphaKey, 20);
  TenantLoad beta(gateway.port(), kBetaKey, 2);
  std::this_thread::sleep_for(Millis(1'500));  // alpha's queue builds up
  alpha.measure(true);
  beta.measure(true);
  constexpr std::size_t kSamples = 24;
  const auto deadline = Clock::now() + Millis(60'000);
  while (beta.waits().size() < kSamples && Clock::now() < deadline) std::this_thread::sleep_for(Millis(50));
  beta.stop();
  alpha.stop();
  EXPECT_EQ(alpha.errors() + beta.errors(), 0);
  const auto beta_waits = beta.waits();
  ASSERT_GE(beta_waits.size(), kSamples);
  const auto alpha_waits = alpha.waits();
  ASSERT_FALSE(alpha_waits.empty());
  auto service = alpha.service_times();
  const auto beta_service = beta.service_times();
  service.insert(service.end(), beta_service.begin(), beta_service.end());

  const double beta_worst = percentile(beta_waits, 100);
  const double service_median = percentile(service, 50);
  const double alpha_median_wait = percentile(alpha_waits, 50);
  RecordProperty("beta_max_queue_ms", std::to_string(beta_worst));
  RecordProperty("service_median_ms", std::to_string(service_median));
  RecordProperty("alpha_median_queue_ms", std::to_string(alpha_median_wait));
  // The load is real: alpha's own requests queue for several service times.
  EXPECT_GT(alpha_median_wait, 2 * service_median)
      << "alpha median wait " << alpha_median_wait << " ms, service " << service_median << " ms";
  // A whole service time of leeway for slots freeing at engine-step
  // boundaries and CPU hiccups: still half of what FIFO would give.
  EXPECT_LE(beta_worst, 2 * service_median)
      << "beta's worst wait " << beta_worst << " ms against a median service time of " << service_median
      << " ms (alpha's median wait " << alpha_median_wait << " ms)\n"
      << describe_output(gateway);
}

}  // namespace
}  // namespace arbiter::test
