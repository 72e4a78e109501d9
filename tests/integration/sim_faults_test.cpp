// arbiter-sim's fault injection, by flag and through POST /admin/faults:
// error statuses, added latency, hangs, crashes mid-stream, slow start and
// a shrinking KV cache.
#include <csignal>

#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"

namespace arbiter::test::sim_faults_test {
namespace {

constexpr Millis kWait{3'000};

HttpRequest small_chat(const std::string& extra = R"("max_tokens":2)") {
  return sim_post("/v1/chat/completions", sim_chat(extra));
}

TEST(SimFaults, ErrorRateAnswersEachStatusWithAnOpenAiBody) {
  for (const auto& [status, type] : std::vector<std::pair<int, std::string>>{
           {429, "RateLimitError"}, {500, "InternalServerError"}, {503, "ServiceUnavailableError"}}) {
    SimProcess sim({"--error-rate", "1", "--error-status", std::to_string(status)});
    const auto res = http_call(sim.port(), small_chat());
    ASSERT_EQ(res.status, status) << res.body;
    const auto err = res.json().at("error").as_object();
    EXPECT_EQ(err.at("code").as_int64(), status);
    EXPECT_EQ(err.at("type").as_string(), type);
    EXPECT_FALSE(err.at("message").as_string().empty());
    EXPECT_EQ(sim.metric("arbiter_sim_faults_injected_total", {{"kind", "error"}}), 1);
    EXPECT_EQ(sim.metric("vllm:generation_tokens_total"), 0);  // never reached the engine
  }
}

TEST(SimFaults, ErrorRateIsAFractionDeterministicWithTheSeed) {
  const auto outcomes = [] {
    SimProcess sim({"--error-rate", "0.5", "--seed", "3"});
    std::string out;
    for (int i = 0; i < 40; ++i) out += http_call(sim.port(), small_chat()).status == 200 ? '.' : 'E';
    return out;
  };
  const std::string first = outcomes();
  const auto errors = std::count(first.begin(), first.end(), 'E');
  EXPECT_GT(errors, 8) << first;
  EXPECT_LT(errors, 32) << first;
  EXPECT_EQ(outcomes(), first);
}

TEST(SimFaults, AdminEndpointReadsAndChangesFaults) {
  SimProcess sim;
  ASSERT_EQ(sim.set_faults(R"({"error_rate":1,"error_status":429})"), 200);
  const auto faults = http_get(sim.port(), "/admin/faults").json().as_object();
  EXPECT_EQ(faults.at("error_rate").as_double(), 1.0);
  EXPECT_EQ(faults.at("error_status").as_int64(), 429);
  EXPECT_EQ(http_call(sim.port(), small_chat()).status, 429);
  ASSERT_EQ(sim.set_faults(R"({"error_rate":0})"), 200);
  EXPECT_EQ(http_call(sim.port(), small_chat()).status, 200);
  const auto bad = http_post(sim.port(), "/admin/faults", R"({"error_status":404})");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body.find("error_status"), std::string::npos);
}

TEST(SimFaults, AddedLatencyDelaysTheAnswer) {
  SimProcess sim({"--added-latency-ms", "300"});
  const auto start = Clock::now();
  ASSERT_EQ(http_call(sim.port(), small_chat()).status, 200);
  EXPECT_GE(ms_between(start, Clock::now()), 300.0);
  // Cleared at run time: told apart by order, not by a time. A request
  // held by a 60 s latency is still unanswered when one sent after the
  // fault was cleared has its answer (a latency still applied would hold
  // the second past the call's 30 s bound).
  ASSERT_EQ(sim.set_faults(R"({"added_latency_ms":60000})"), 200);
  HttpConnection held(sim.port());
  held.send(small_chat());
  // Received (and its faults read, in the same step) before they change.
  ASSERT_EQ(sim.wait_for_metric("arbiter_sim_requests_received_total", [](double v) { return v >= 2; }, Millis(30'000)), 2);
  ASSERT_EQ(sim.set_faults(R"({"added_latency_ms":0})"), 200);
  ASSERT_EQ(http_call(sim.port(), small_chat(), Millis(30'000)).status, 200);
  EXPECT_THROW(held.read_head(Millis(1)), TimeoutError) << "the 60 s latency was not applied";
  held.close_abruptly();
}

TEST(SimFaults, HangReadsTheRequestAndNeverAnswers) {
  SimProcess sim({"--drain-s", "1"});
  ASSERT_EQ(sim.set_faults(R"({"hang_rate":1})"), 200);
  HttpConnection hung(sim.port());
  hung.send(small_chat());
  EXPECT_THROW(hung.read_head(Millis(500)), TimeoutError);
  EXPECT_EQ(sim.metric("arbiter_sim_faults_injected_total", {{"kind", "hang"}}), 1);
  EXPECT_EQ(http_get(sim.port(), "/health").status, 200);  // the server itself is fine

  ASSERT_EQ(sim.set_faults(R"({"hang_rate":0})"), 200);
  EXPECT_EQ(http_call(sim.port(), small_chat()).status, 200);
  // A hung request does not hold up shutdown past the drain deadline.
  const auto term = Clock::now();
  sim.child().signal(SIGTERM);
  EXPECT_EQ(sim.child().wait(Millis(5'000)), 0) << sim.stderr_text();
  EXPECT_GE(ms_between(term, Clock::now()), 900.0);
}

TEST(SimFaults, HangByFlag) {
  SimProcess sim({"--hang-rate", "1"});
  HttpConnection hung(sim.port());
  hung.send(small_chat());
  EXPECT_THROW(hung.read_head(Millis(300)), TimeoutError);
}

TEST(SimFaults, CrashMidStreamAfterKTokens) {
  SimProcess sim({"--crash-after-tokens", "3"});
  HttpConnection conn(sim.port());
  conn.send(small_chat(R"("max_tokens":50,"ignore_eos":true,"stream":true)"));
  ASSERT_EQ(conn.read_head().status, 200);
  const std::string body = conn.read_rest(kWait);
  EXPECT_FALSE(conn.complete());  // no final chunk: the socket was dropped
  const auto payloads = sse_payloads(body);
  ASSERT_EQ(payloads.size(), 4u) << body;  // role + 3 tokens
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 1; }, kWait), 1);
  EXPECT_EQ(sim.metric("arbiter_sim_faults_injected_total", {{"kind", "crash"}}), 1);

  // Non-streaming: the connection closes without an answer.
  HttpConnection whole(sim.port());
  whole.send(small_chat(R"("max_tokens":50,"ignore_eos":true)"));
  EXPECT_ANY_THROW(whole.read_head(kWait));
}

TEST(SimFaults, CrashByAdminEndpointHitsItsShareOfRequests) {
  SimProcess sim;
  ASSERT_EQ(sim.set_faults(R"({"crash_after_tokens":2,"crash_rate":0})"), 200);
  const auto fine = http_call(sim.port(), small_chat(R"("max_tokens":5,"ignore_eos":true,"stream":true)"));
  EXPECT_TRUE(fine.body.ends_with("data: [DONE]\n\n"));
  ASSERT_EQ(sim.set_faults(R"({"crash_rate":1})"), 200);
  HttpConnection conn(sim.port());
  conn.send(small_chat(R"("max_tokens":5,"ignore_eos":true,"stream":true)"));
  ASSERT_EQ(conn.read_head().status, 200);
  const auto body = conn.read_rest(kWait);
  EXPECT_EQ(sse_payloads(body).size(), 3u);  // role + 2 tokens
  EXPECT_FALSE(conn.complete());
}

TEST(SimFaults, SlowStartAnswers503ThenServes) {
  // Taken before the process starts, so its 3 s window ends at least 3 s
  // after this however slowly it starts; long enough that the first calls
  // below land inside it on a loaded machine.
  const auto started = Clock::now();
  SimProcess sim({"--slow-start-s", "3"});
  const auto health = http_get(sim.port(), "/health");
  EXPECT_EQ(health.status, 503);
  const auto early = http_call(sim.port(), small_chat());
  EXPECT_EQ(early.status, 503);
  EXPECT_EQ(early.json().at("error").at("code").as_int64(), 503);
  // Then it serves.
  const auto deadline = started + Millis(30'000);
  while (http_get(sim.port(), "/health").status != 200) {
    ASSERT_LT(Clock::now(), deadline) << "still starting after 30 s";
    std::this_thread::sleep_for(Millis(50));
  }
  EXPECT_GE(ms_between(started, Clock::now()), 3'000.0);
  EXPECT_EQ(http_call(sim.port(), small_chat()).status, 200);
  EXPECT_EQ(sim.metric("arbiter_sim_faults_injected_total", {{"kind", "slow_start"}}), 1);
  // At run time the window restarts from now (60 s: still open at the next call).
  ASSERT_EQ(sim.set_faults(R"({"slow_start_s":60})"), 200);
  EXPECT_EQ(http_get(sim.port(), "/health").status, 503);
}

TEST(SimFaults, KvShrinkCausesPreemptions) {
  // 64 blocks of 16 tokens; ~10 ms steps. Eight streams of 3 + 100 tokens
  // need 7 blocks each at the end: they fit in 64, not in 12.
  SimProcess sim({"--num-blocks", "64", "--step-time-scale", "10"});
  std::vector<std::unique_ptr<HttpConnection>> conns;
  for (int i = 0; i < 8; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(sim.port()));
    conns.back()->send(small_chat(R"("max_tokens":100,"ignore_eos":true,"stream":true,"seed":)" + std::to_string(i)));
  }
  for (auto& c : conns) ASSERT_EQ(c->read_head().status, 200);
  for (auto& c : conns) ASSERT_GE(c->read_events(3).size(), 3u);
  EXPECT_EQ(sim.metric("vllm:num_preemptions_total"), 0);

  ASSERT_EQ(sim.set_faults(R"({"kv_blocks":12})"), 200);
  const auto preempted = sim.wait_for_metric("vllm:num_preemptions_total", [](double v) { return v > 0; }, kWait);
  EXPECT_GT(preempted.value_or(0), 0) << sim.metrics();
  EXPECT_EQ(sim.metric("arbiter_sim_kv_blocks_usable"), 12);

  // Capacity back: every stream completes, each with all of its tokens.
  ASSERT_EQ(sim.set_faults(R"({"kv_blocks":0})"), 200);
  for (auto& c : conns) {
    const std::string body = c->read_rest(Millis(10'000));
    EXPECT_TRUE(body.ends_with("data: [DONE]\n\n"));
    EXPECT_EQ(sse_payloads(body).size(), 101u);  // role + 100 tokens
  }
}

TEST(SimFaults, KvBlocksByFlag) {
  SimProcess sim({"--kv-blocks", "10"});
  EXPECT_EQ(sim.wait_for_metric("arbiter_sim_kv_blocks_usable", [](double v) { return v == 10; }, kWait), 10);
  EXPECT_EQ(sim.metric("vllm:cache_config_info", {{"num_gpu_blocks", "4096"}}), 1);
}

}  // namespace
}  // namespace arbiter::test::sim_faults_test
