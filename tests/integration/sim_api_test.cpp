// arbiter-sim's OpenAI API, metrics, aborts and multi-engine serving,
// checked against a real process on ephemeral ports.
#include <csignal>
#include <map>
#include <set>

#include <gtest/gtest.h>

#include "integration/sim_harness.hpp"

namespace arbiter::test::sim_api_test {
namespace {

namespace json = boost::json;

constexpr Millis kWait{3'000};  // generous: the machine is shared

std::uint32_t prompt_tokens_of(std::string_view text) { return static_cast<std::uint32_t>((text.size() + 3) / 4); }

TEST(SimApi, NonStreamingChatHasTextAndUsage) {
  SimProcess sim;
  const auto res = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":8,"ignore_eos":true)")));
  ASSERT_EQ(res.status, 200) << res.body;
  const auto body = res.json().as_object();
  EXPECT_EQ(body.at("object").as_string(), "chat.completion");
  EXPECT_EQ(body.at("model").as_string(), "tiny");
  const auto& choice = body.at("choices").at(0).as_object();
  EXPECT_EQ(choice.at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(choice.at("message").at("content").as_string().size(), 8u * 4);
  EXPECT_EQ(choice.at("finish_reason").as_string(), "length");
  const auto& usage = body.at("usage").as_object();
  EXPECT_EQ(usage.at("prompt_tokens").as_int64(), prompt_tokens_of("Say hello."));
  EXPECT_EQ(usage.at("completion_tokens").as_int64(), 8);
  EXPECT_EQ(usage.at("total_tokens").as_int64(), 8 + prompt_tokens_of("Say hello."));
}

TEST(SimApi, NonStreamingCompletion) {
  SimProcess sim;
  const auto res = http_call(sim.port(), sim_post("/v1/completions",
                                                  R"({"model":"tiny","prompt":"Once upon a time","max_tokens":5,"ignore_eos":true})"));
  ASSERT_EQ(res.status, 200) << res.body;
  const auto body = res.json().as_object();
  EXPECT_EQ(body.at("object").as_string(), "text_completion");
  EXPECT_EQ(body.at("choices").at(0).at("text").as_string().size(), 20u);
  EXPECT_EQ(body.at("usage").at("prompt_tokens").as_int64(), 4);
  EXPECT_EQ(body.at("usage").at("completion_tokens").as_int64(), 5);
}

TEST(SimApi, StreamingChatWithIncludeUsage) {
  SimProcess sim;
  const std::string extra = R"("max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true})";
  const auto res = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(extra)));
  ASSERT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(res.header("content-type"), "text/event-stream");
  const auto events = split_sse_events(res.body);
  ASSERT_EQ(events.size(), 8u) << res.body;  // role, 5 tokens, usage, [DONE]
  EXPECT_EQ(events.back(), "data: [DONE]\n\n");
  const auto payloads = sse_payloads(res.body);
  ASSERT_EQ(payloads.size(), 7u);
  EXPECT_EQ(payloads[0].at("choices").at(0).at("delta").at("role").as_string(), "assistant");
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(payloads[i].at("object").as_string(), "chat.completion.chunk");
    EXPECT_TRUE(payloads[i].at("usage").is_null()) << i;
    const auto& finish = payloads[i].at("choices").at(0).at("finish_reason");
    if (i == 5) EXPECT_EQ(finish.as_string(), "length");
    else EXPECT_TRUE(finish.is_null()) << i;
  }
  const auto& last = payloads[6];
  EXPECT_TRUE(last.at("choices").as_array().empty());
  EXPECT_EQ(last.at("usage").at("completion_tokens").as_int64(), 5);
  EXPECT_EQ(last.at("usage").at("prompt_tokens").as_int64(), prompt_tokens_of("Say hello."));
  EXPECT_EQ(last.at("usage").at("total_tokens").as_int64(), 5 + prompt_tokens_of("Say hello."));

  // Deterministic: the same request answered whole gives the same text.
  const auto whole = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":5,"ignore_eos":true)")));
  EXPECT_EQ(stream_text(payloads), std::string(whole.json().at("choices").at(0).at("message").at("content").as_string()));
}

TEST(SimApi, StreamingCompletionWithoutUsage) {
  SimProcess sim;
  const auto res = http_call(
      sim.port(), sim_post("/v1/completions", R"({"model":"tiny","prompt":"abc","max_tokens":3,"ignore_eos":true,"stream":true})"));
  ASSERT_EQ(res.status, 200);
  const auto payloads = sse_payloads(res.body);
  ASSERT_EQ(payloads.size(), 3u) << res.body;  // one per token, no usage chunk
  for (const auto& p : payloads) {
    EXPECT_EQ(p.at("object").as_string(), "text_completion");
    EXPECT_FALSE(p.contains("usage"));
  }
  EXPECT_EQ(stream_text(payloads).size(), 12u);
  EXPECT_TRUE(res.body.ends_with("data: [DONE]\n\n"));
}

TEST(SimApi, MaxTokensAndMinTokensAreHonoured) {
  // Natural answers of about one token: min_tokens decides the length.
  SimProcess sim({"--output-mean-tokens", "1"});
  const auto with_min = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":20,"min_tokens":6)")));
  ASSERT_EQ(with_min.status, 200) << with_min.body;
  EXPECT_EQ(with_min.json().at("usage").at("completion_tokens").as_int64(), 6);
  EXPECT_EQ(with_min.json().at("choices").at(0).at("finish_reason").as_string(), "stop");

  SimProcess chatty({"--output-mean-tokens", "1000"});
  const auto capped = http_call(chatty.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":3,"stream":true)")));
  const auto payloads = sse_payloads(capped.body);
  ASSERT_EQ(payloads.size(), 4u) << capped.body;  // role + 3 tokens
  EXPECT_EQ(payloads.back().at("choices").at(0).at("finish_reason").as_string(), "length");

  const auto bad = http_call(chatty.port(), sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":3,"min_tokens":4)")));
  EXPECT_EQ(bad.status, 400);
}

TEST(SimApi, ModelsHealthAndErrors) {
  SimProcess sim({"--model", "m1"});
  EXPECT_EQ(http_get(sim.port(), "/health").status, 200);
  const auto models = http_get(sim.port(), "/v1/models");
  ASSERT_EQ(models.status, 200);
  EXPECT_EQ(models.json().at("data").at(0).at("id").as_string(), "m1");

  const auto unknown = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat("", "hi", "nope")));
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.json().at("error").at("type").as_string(), "NotFoundError");
  EXPECT_EQ(unknown.json().at("error").at("code").as_int64(), 404);

  const auto priority = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(R"("priority":1)", "hi", "m1")));
  EXPECT_EQ(priority.status, 400);
  EXPECT_EQ(priority.json().at("error").at("param").as_string(), "priority");
  EXPECT_EQ(http_get(sim.port(), "/nowhere").status, 404);

  SimProcess prio({"--scheduling-policy", "priority"});
  const auto ok = http_call(prio.port(), sim_post("/v1/chat/completions", sim_chat(R"("priority":1,"max_tokens":2)")));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST(SimApi, MetricsAfterTraffic) {
  SimProcess sim;
  const std::string shared(400, 'p');  // 100 tokens: 6 full blocks shared by every request
  int generated = 0;
  for (int i = 0; i < 5; ++i) {
    const auto res = http_call(sim.port(), sim_post("/v1/chat/completions",
                                                    sim_chat(R"("max_tokens":)" + std::to_string(3 + i) + R"(,"ignore_eos":true)", shared)));
    ASSERT_EQ(res.status, 200);
    generated += 3 + i;
  }
  const std::string text = sim.metrics();
  const Labels labels = {{"model_name", "tiny"}, {"engine", "0"}};
  EXPECT_EQ(metric_value(text, "vllm:generation_tokens_total", labels), generated);
  EXPECT_EQ(metric_value(text, "vllm:prompt_tokens_total", labels), 5 * 100);
  EXPECT_EQ(metric_value(text, "vllm:num_requests_running", labels), 0);
  EXPECT_EQ(metric_value(text, "vllm:num_requests_waiting", labels), 0);
  EXPECT_EQ(metric_value(text, "vllm:kv_cache_usage_perc", labels), 0);
  EXPECT_EQ(metric_value(text, "vllm:prefix_cache_queries_total", labels), 5 * 100);
  EXPECT_EQ(metric_value(text, "vllm:prefix_cache_hits_total", labels), 4 * 6 * 16);  // 6 blocks, after the first
  EXPECT_EQ(metric_value(text, "vllm:num_preemptions_total", labels), 0);
  EXPECT_EQ(metric_value(text, "vllm:request_success_total", {{"finished_reason", "length"}}), 5);
  EXPECT_EQ(metric_value(text, "vllm:time_to_first_token_seconds_count", labels), 5);
  EXPECT_EQ(metric_value(text, "vllm:e2e_request_latency_seconds_count", labels), 5);
  EXPECT_EQ(metric_value(text, "vllm:request_queue_time_seconds_count", labels), 5);
  const double e2e = metric_value(text, "vllm:e2e_request_latency_seconds_sum", labels).value_or(-1);
  EXPECT_GT(e2e, 5 * 0.002);  // at least two ~1 ms steps each
  EXPECT_LT(e2e, 5 * 2.0);
  EXPECT_EQ(metric_value(text, "vllm:cache_config_info", {{"block_size", "16"}, {"num_gpu_blocks", "4096"}}), 1);
  const double busy = metric_value(text, "arbiter_sim_busy_seconds_total", labels).value_or(-1);
  EXPECT_GT(busy, 0.0);
  EXPECT_LT(busy, e2e);
  EXPECT_EQ(metric_value(text, "arbiter_sim_requests_aborted_total", labels), 0);
  EXPECT_EQ(metric_value(text, "arbiter_sim_wasted_tokens_total", labels), 0);
  EXPECT_NE(text.find("# TYPE vllm:time_to_first_token_seconds histogram"), std::string::npos);
}

TEST(SimApi, ClientDisconnectMidStreamIsAbortedAndWasted) {
  SimProcess sim({"--step-time-scale", "20"});  // ~20 ms steps: 200 tokens take 4 s
  HttpConnection conn(sim.port());
  conn.send(sim_post("/v1/chat/completions", sim_chat(R"("max_tokens":200,"ignore_eos":true,"stream":true)")));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(4).size(), 4u);
  EXPECT_EQ(sim.metric("vllm:num_requests_running"), 1);
  conn.close_abruptly();

  const auto aborted = sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 1; }, kWait);
  EXPECT_EQ(aborted, 1) << sim.metrics();
  const std::string text = sim.metrics();
  EXPECT_EQ(metric_value(text, "vllm:num_requests_running"), 0);
  EXPECT_EQ(metric_value(text, "arbiter_sim_wasted_tokens_total", {{"kind", "prefill"}}), prompt_tokens_of("Say hello."));
  const double decode = metric_value(text, "arbiter_sim_wasted_tokens_total", {{"kind", "decode"}}).value_or(0);
  EXPECT_GE(decode, 2);     // tokens 2..4 were read; more may have been decoded since
  EXPECT_LT(decode, 100);   // but it stopped long before the end
  // The engine does no more work for it.
  const double steps = metric_value(text, "arbiter_sim_steps_total").value_or(0);
  std::this_thread::sleep_for(Millis(200));
  EXPECT_EQ(sim.metric("arbiter_sim_steps_total"), steps);
}

// n answers (vLLM's parallel sampling): each its own sequence on the
// engine, its own text, told apart by index, usage summed over them.
TEST(SimApi, NAnswersComeWholeAndStreamedEachByItsIndex) {
  SimProcess sim;
  const auto whole = http_call(sim.port(), sim_post("/v1/chat/completions",
                                                    sim_chat(R"("n":3,"max_tokens":5,"ignore_eos":true)")));
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json::value answer = whole.json();
  const auto& choices = answer.at("choices").as_array();
  ASSERT_EQ(choices.size(), 3u);
  std::set<std::string> texts;
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(choices[i].at("index").as_int64(), static_cast<std::int64_t>(i));
    EXPECT_EQ(choices[i].at("finish_reason").as_string(), "length");
    texts.insert(std::string(choices[i].at("message").at("content").as_string()));
  }
  EXPECT_EQ(texts.size(), 3u) << whole.body;
  EXPECT_EQ(answer.at("usage").at("completion_tokens").as_int64(), 15);
  EXPECT_EQ(answer.at("usage").at("prompt_tokens").as_int64(), prompt_tokens_of("Say hello."));

  const std::string extra =
      R"("n":3,"max_tokens":5,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true})";
  const auto streamed = http_call(sim.port(), sim_post("/v1/chat/completions", sim_chat(extra)));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  EXPECT_EQ(split_sse_events(streamed.body).back(), "data: [DONE]\n\n");
  std::map<std::int64_t, std::string> text_of;
  std::map<std::int64_t, int> roles, finishes;
  std::int64_t usage = -1;
  for (const auto& p : sse_payloads(streamed.body)) {
    if (const auto* u = p.if_contains("usage"); u && u->is_object()) usage = u->at("completion_tokens").as_int64();
    for (const auto& c : p.at("choices").as_array()) {
      const std::int64_t index = c.at("index").as_int64();
      const auto& delta = c.at("delta").as_object();
      if (delta.contains("role")) ++roles[index];
      if (const auto* content = delta.if_contains("content")) text_of[index] += content->as_string();
      if (!c.at("finish_reason").is_null()) ++finishes[index];
    }
  }
  EXPECT_EQ(usage, 15);
  ASSERT_EQ(text_of.size(), 3u);
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(roles[i], 1) << i;
    EXPECT_EQ(finishes[i], 1) << i;
    // The same answers as the whole response's, each under its index.
    EXPECT_EQ(text_of[i], std::string(choices[i].at("message").at("content").as_string())) << i;
  }
}

// Each answer is a sequence in the batch: a request for 3 runs 3, and a
// client that leaves takes all of them out.
TEST(SimApi, NAnswersRunAsNSequencesAndLeaveTogether) {
  SimProcess sim({"--step-time-scale", "20"});  // ~20 ms steps: 200 tokens take 4 s
  HttpConnection conn(sim.port());
  conn.send(sim_post("/v1/chat/completions", sim_chat(R"("n":3,"max_tokens":200,"ignore_eos":true,"stream":true)")));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(8).size(), 8u);
  EXPECT_EQ(sim.metric("vllm:num_requests_running"), 3);
  conn.close_abruptly();
  const auto aborted =
      sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 3; }, kWait);
  EXPECT_EQ(aborted, 3) << sim.metrics();
  EXPECT_EQ(sim.metric("vllm:num_requests_running"), 0);
}

// A batch of prompts (completions), as vLLM serves one: n answers per prompt,
// choice index prompt x n + i, each prompt answering as it would alone;
// usage counts each prompt once. Whole, streamed, and as sequences.
TEST(SimApi, ABatchOfPromptsIsAnsweredPromptByPromptEachByItsIndex) {
  SimProcess sim({"--step-time-scale", "20"});  // ~20 ms steps: the running count can be read
  auto completion = [](const std::string& prompt, const std::string& extra) {
    return sim_post("/v1/completions", R"({"model":"tiny","prompt":)" + prompt +
                                           R"(,"max_tokens":6,"ignore_eos":true,"seed":5)" + extra + "}");
  };
  const std::string batch = R"(["Once upon a time","In a galaxy far away"])";
  const auto whole = http_call(sim.port(), completion(batch, R"(,"n":2)"));
  ASSERT_EQ(whole.status, 200) << whole.body;
  const json::value answer = whole.json();
  const auto& choices = answer.at("choices").as_array();
  ASSERT_EQ(choices.size(), 4u) << whole.body;
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(choices[i].at("index").as_int64(), static_cast<std::int64_t>(i));
  EXPECT_EQ(answer.at("usage").at("prompt_tokens").as_int64(),
            prompt_tokens_of("Once upon a time") + prompt_tokens_of("In a galaxy far away"));
  EXPECT_EQ(answer.at("usage").at("completion_tokens").as_int64(), 24);
  // Each prompt's first answer is its answer alone.
  const auto alone_0 = http_call(sim.port(), completion(R"("Once upon a time")", ""));
  const auto alone_1 = http_call(sim.port(), completion(R"("In a galaxy far away")", ""));
  ASSERT_EQ(alone_0.status, 200);
  ASSERT_EQ(alone_1.status, 200);
  EXPECT_EQ(choices[0].at("text"), alone_0.json().at("choices").at(0).at("text"));
  EXPECT_EQ(choices[2].at("text"), alone_1.json().at("choices").at(0).at("text"));
  EXPECT_NE(choices[0].at("text"), choices[2].at("text"));

  const auto streamed = http_call(
      sim.port(), completion(batch, R"(,"n":2,"stream":true,"stream_options":{"include_usage":true})"));
  ASSERT_EQ(streamed.status, 200) << streamed.body;
  std::map<std::int64_t, std::string> text_of;
  std::int64_t prompt_usage = -1;
  for (const auto& p : sse_payloads(streamed.body)) {
    if (const auto* u = p.if_contains("usage"); u && u->is_object()) prompt_usage = u->at("prompt_tokens").as_int64();
    for (const auto& c : p.at("choices").as_array()) text_of[c.at("index").as_int64()] += c.at("text").as_string();
  }
  ASSERT_EQ(text_of.size(), 4u) << streamed.body;
  for (std::int64_t i = 0; i < 4; ++i) EXPECT_EQ(text_of[i], std::string(choices[i].at("text").as_string())) << i;
  EXPECT_EQ(prompt_usage, answer.at("usage").at("prompt_tokens").as_int64());

  // Two prompts x n = 2: four sequences in the engine's batch.
  HttpConnection conn(sim.port());
  conn.send(sim_post("/v1/completions", R"({"model":"tiny","prompt":["a","b"],"n":2,"max_tokens":200,)"
                                        R"("ignore_eos":true,"stream":true})"));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(8).size(), 8u);
  EXPECT_EQ(sim.metric("vllm:num_requests_running"), 4);
  conn.close_abruptly();
  EXPECT_EQ(sim.wait_for_metric("arbiter_sim_requests_aborted_total", [](double v) { return v >= 4; }, kWait), 4)
      << sim.metrics();
}

TEST(SimApi, FourEnginesServeFourIndependentPorts) {
  SimProcess sim({"--engines", "4"}, 4);
  ASSERT_EQ(sim.ports().size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(sim.port(i), sim.port(j));
  }
  // Engine i gets i + 1 requests; each counts only its own.
  for (std::size_t i = 0; i < 4; ++i) {
    for (std::size_t k = 0; k <= i; ++k) {
      const auto res = http_call(sim.port(i), sim_post("/v1/completions", R"({"model":"tiny","prompt":"x","max_tokens":2,"ignore_eos":true})"));
      ASSERT_EQ(res.status, 200) << "engine " << i;
    }
  }
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(sim.metric("vllm:generation_tokens_total", {}, i), 2.0 * (i + 1)) << "engine " << i;
  }
  // Faults are per engine too.
  ASSERT_EQ(sim.set_faults(R"({"error_rate":1})", 2), 200);
  EXPECT_EQ(http_call(sim.port(2), sim_post("/v1/completions", R"({"model":"tiny","prompt":"x"})")).status, 503);
  EXPECT_EQ(http_call(sim.port(3), sim_post("/v1/completions", R"({"model":"tiny","prompt":"x"})")).status, 200);
}

TEST(SimApi, SigtermLetsStreamsFinishThenExits) {
  SimProcess sim({"--step-time-scale", "10"});  // ~10 ms steps: 60 tokens in ~0.6 s
  HttpConnection conn(sim.port());
  conn.send(sim_post("/v1/completions", R"({"model":"tiny","prompt":"x","max_tokens":60,"ignore_eos":true,"stream":true})"));
  ASSERT_EQ(conn.read_head().status, 200);
  ASSERT_GE(conn.read_events(2).size(), 2u);
  sim.child().signal(SIGTERM);
  const std::string body = conn.read_rest(kWait);
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n"));
  EXPECT_EQ(sse_payloads(body).size(), 60u);
  EXPECT_EQ(sim.child().wait(kWait), 0) << sim.stderr_text();
}

}  // namespace
}  // namespace arbiter::test::sim_api_test

namespace arbiter::test::sim_api_test {
namespace {

TEST(SimCli, BadFlagsExitTwoWithTheReason) {
  const auto bad = run_command({sim_binary(), "--port", "0", "--engines", "0"}, Millis(5'000));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--engines wants an integer in [1, 1024]"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("usage: arbiter-sim"), std::string::npos);
  EXPECT_EQ(run_command({sim_binary(), "--profile", "nope"}, Millis(5'000)).exit_code, 2);
  const auto help = run_command({sim_binary(), "--help"}, Millis(5'000));
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--crash-after-tokens"), std::string::npos);
}

}  // namespace
}  // namespace arbiter::test::sim_api_test
