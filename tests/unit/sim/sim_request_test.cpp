// From an OpenAI body to what the simulated engine runs: prompt tokens and
// block hashes, output length and finish reason, the continuation rule and
// the errors vLLM would give.
#include <gtest/gtest.h>

#include <set>

#include <boost/json.hpp>

#include "engine/generated_text.hpp"
#include "engine/prompt.hpp"
#include "sim/sim_request.hpp"
#include "sim/sim_text.hpp"

namespace arbiter::sim {
namespace {

class SimRequestTest : public ::testing::Test {
 protected:
  SimRequestTest() {
    config_ = engine::find_profile("tiny")->config;
    limits_ = RequestLimits{.model = "m", .config = &config_, .output_mean_tokens = 20, .seed = 1};
  }
  std::expected<SimRequest, SimError> chat(std::string_view extra, std::string_view messages =
                                                                      R"([{"role":"user","content":"hello"}])") {
    const std::string body = std::string(R"({"model":"m","messages":)") + std::string(messages) +
                             (extra.empty() ? "" : ",") + std::string(extra) + "}";
    return parse_sim_request(Route::kChatCompletions, body, limits_);
  }
  std::string text_of(const SimRequest& r) {
    std::string t;
    const SimAnswer& a = r.answers.front();
    for (std::uint32_t i = 0; i < a.output_tokens; ++i) t += engine::token_word(a.text_seed, r.text_offset + i);
    return t;
  }

  engine::EngineConfig config_;
  RequestLimits limits_;
};

TEST_F(SimRequestTest, ChatPromptIsTheConcatenatedContents) {
  const auto r = chat("", R"([{"role":"system","content":"0123456789abcdef"},)"
                          R"({"role":"user","content":[{"type":"text","text":"0123"},{"type":"text","text":"45"}]}])");
  ASSERT_TRUE(r) << r.error().message;
  // "0123456789abcdef012345": 22 bytes, 6 tokens; no full 64-byte block.
  EXPECT_EQ(r->prompts.at(0).tokens, 6u);
  EXPECT_TRUE(r->prompts.at(0).block_hashes.empty());
  const auto p = engine::prompt_blocks("0123456789abcdef012345", 16, engine::hash_bytes("m"));
  EXPECT_EQ(r->prompts.at(0).tokens, p.num_tokens);
}

TEST_F(SimRequestTest, LongPromptsGetChainedBlockHashesSaltedByModel) {
  const std::string text(200, 'x');
  const auto r = chat("", R"([{"role":"user","content":")" + text + R"("}])");
  ASSERT_TRUE(r);
  const auto p = engine::prompt_blocks(text, 16, engine::hash_bytes("m"));
  EXPECT_EQ(r->prompts.at(0).tokens, 50u);
  EXPECT_EQ(r->prompts.at(0).block_hashes, p.block_hashes);
  EXPECT_EQ(r->prompts.at(0).block_hashes.size(), 3u);
}

TEST_F(SimRequestTest, CompletionPromptsStringOrTokenIds) {
  const auto s = parse_sim_request(Route::kCompletions, R"({"model":"m","prompt":"12345678"})", limits_);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->prompts.at(0).tokens, 2u);
  const auto ids = parse_sim_request(Route::kCompletions, R"({"model":"m","prompt":[1,2,3,4,5]})", limits_);
  ASSERT_TRUE(ids);
  ASSERT_EQ(ids->prompts.size(), 1u);
  EXPECT_EQ(ids->prompts[0].tokens, 5u);
  const auto one = parse_sim_request(Route::kCompletions, R"({"model":"m","prompt":["1234"]})", limits_);
  ASSERT_TRUE(one);
  ASSERT_EQ(one->prompts.size(), 1u);
  EXPECT_EQ(one->prompts[0].tokens, 1u);
}

// A batch of prompts, as vLLM serves one: each prompt checked and run on its
// own with n answers, prompt by prompt, each answering as it would alone.
TEST_F(SimRequestTest, ABatchOfPromptsGivesEachPromptItsOwnNAnswers) {
  auto completion = [&](std::string_view prompt, std::string_view extra) {
    return parse_sim_request(
        Route::kCompletions,
        std::string(R"({"model":"m","max_tokens":30,"seed":3,"prompt":)") + std::string(prompt) + "," +
            std::string(extra) + "}",
        limits_);
  };
  const std::string long_text(200, 'x');
  const auto batch = completion(R"(["12345678",")" + long_text + R"("])", R"("n":2)");
  ASSERT_TRUE(batch) << batch.error().message;
  ASSERT_EQ(batch->prompts.size(), 2u);
  EXPECT_EQ(batch->prompts[0].tokens, 2u);
  EXPECT_EQ(batch->prompts[1].tokens, 50u);
  EXPECT_EQ(batch->prompts[1].block_hashes,
            engine::prompt_blocks(long_text, 16, engine::hash_bytes("m")).block_hashes);
  ASSERT_EQ(batch->answers.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(batch->answers[i].prompt, i / 2) << i;
  // Each prompt's answers are the ones it gets alone.
  const auto first = completion(R"("12345678")", R"("n":2)");
  const auto second = completion(R"([")" + long_text + R"("])", R"("n":2)");
  ASSERT_TRUE(first);
  ASSERT_TRUE(second);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(batch->answers[i].text_seed, first->answers[i].text_seed);
    EXPECT_EQ(batch->answers[i].output_tokens, first->answers[i].output_tokens);
    EXPECT_EQ(batch->answers[2 + i].text_seed, second->answers[i].text_seed);
    EXPECT_EQ(batch->answers[2 + i].output_tokens, second->answers[i].output_tokens);
  }
  // Lists of token ids, one prompt each.
  const auto ids = completion("[[1,2,3],[4,5,6,7,8]]", R"("n":1)");
  ASSERT_TRUE(ids) << ids.error().message;
  ASSERT_EQ(ids->prompts.size(), 2u);
  EXPECT_EQ(ids->prompts[0].tokens, 3u);
  EXPECT_EQ(ids->prompts[1].tokens, 5u);
  // Refused: a mixed batch, a token id that is not an integer, one prompt
  // past the context (named as the prompt's), more answers than served.
  for (const std::string_view bad : {R"(["a",[1,2]])", R"([[1,2],"a"])", R"([[1,"a"]])", R"([{"text":"a"}])"}) {
    const auto r = completion(bad, R"("n":1)");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().status, 400) << bad;
    EXPECT_EQ(r.error().param, "prompt") << bad;
  }
  const auto past = completion(R"(["a",")" + std::string(4 * config_.max_model_len, 'y') + R"("])", R"("n":1)");
  ASSERT_FALSE(past);
  EXPECT_NE(past.error().message.find("maximum context length"), std::string::npos);
  EXPECT_EQ(past.error().param, "prompt");
  const auto many = completion(R"(["a","b","c"])", R"("n":43)");  // 129 answers
  ASSERT_FALSE(many);
  EXPECT_EQ(many.error().param, "prompt");
  EXPECT_TRUE(completion(R"(["a","b","c"])", R"("n":42)"));
}

TEST_F(SimRequestTest, MaxTokensWithIgnoreEosIsExact) {
  const auto r = chat(R"("max_tokens":37,"ignore_eos":true)");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->answers[0].output_tokens, 37u);
  EXPECT_TRUE(r->answers[0].finish_length);
}

TEST_F(SimRequestTest, NaturalLengthStaysWithinMinAndMaxTokens) {
  int stopped = 0;
  for (int seed = 0; seed < 50; ++seed) {
    const auto r = chat(R"("max_tokens":25,"min_tokens":5,"seed":)" + std::to_string(seed));
    ASSERT_TRUE(r);
    EXPECT_GE(r->answers[0].output_tokens, 5u);
    EXPECT_LE(r->answers[0].output_tokens, 25u);
    EXPECT_EQ(r->answers[0].finish_length, r->answers[0].output_tokens == 25u);
    stopped += !r->answers[0].finish_length;
    // Deterministic: the same request gives the same answer.
    EXPECT_EQ(r->answers[0].output_tokens, chat(R"("max_tokens":25,"min_tokens":5,"seed":)" + std::to_string(seed))->answers[0].output_tokens);
  }
  EXPECT_GT(stopped, 10);  // mean 20 under a cap of 25: most stop on their own
  const auto all = chat(R"("max_tokens":12,"min_tokens":12)");
  ASSERT_TRUE(all);
  EXPECT_EQ(all->answers[0].output_tokens, 12u);
}

TEST_F(SimRequestTest, NoMaxTokensMeansTheRestOfTheContext) {
  limits_.output_mean_tokens = 0;
  const auto r = chat("");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->answers[0].output_tokens, config_.max_model_len - r->prompts.at(0).tokens);
}

TEST_F(SimRequestTest, ContinuingTheFinalMessageResumesTheSameAnswer) {
  limits_.output_mean_tokens = 0;
  const auto original = chat(R"("max_tokens":10)");
  ASSERT_TRUE(original);
  const std::string full = text_of(*original);
  const std::string streamed = full.substr(0, 4 * 4);  // the first 4 tokens reached the client
  const auto resumed = chat(R"("max_tokens":6,"continue_final_message":true)",
                            R"([{"role":"user","content":"hello"},{"role":"assistant","content":")" + streamed +
                                R"("}])");
  ASSERT_TRUE(resumed) << resumed.error().message;
  EXPECT_EQ(resumed->text_offset, 4u);
  EXPECT_EQ(resumed->prompts.at(0).tokens, original->prompts.at(0).tokens + 4);
  EXPECT_EQ(streamed + text_of(*resumed), full);
}

TEST_F(SimRequestTest, ContinueNeedsAnAssistantMessageLast) {
  const auto r = chat(R"("continue_final_message":true)");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().status, 400);
}

TEST_F(SimRequestTest, VllmStyleErrors) {
  const auto unknown = parse_sim_request(Route::kCompletions, R"({"model":"x","prompt":"a"})", limits_);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().status, 404);
  EXPECT_EQ(unknown.error().param, "model");

  const auto priority = chat(R"("priority":1)");
  ASSERT_FALSE(priority);
  EXPECT_EQ(priority.error().status, 400);
  EXPECT_EQ(priority.error().param, "priority");
  config_.policy = engine::SchedulingPolicy::kPriority;
  const auto allowed = chat(R"("priority":-3)");
  ASSERT_TRUE(allowed);
  EXPECT_EQ(allowed->priority, -3);

  const auto too_long = chat(R"("max_tokens":100000)");
  ASSERT_FALSE(too_long);
  EXPECT_NE(too_long.error().message.find("maximum context length"), std::string::npos);

  const auto min_over_max = chat(R"("max_tokens":5,"min_tokens":6)");
  ASSERT_FALSE(min_over_max);
  EXPECT_EQ(min_over_max.error().param, "min_tokens");

  EXPECT_EQ(chat(R"("n":0)").error().param, "n");
  EXPECT_EQ(chat(R"("n":129)").error().param, "n");
  EXPECT_EQ(parse_sim_request(Route::kChatCompletions, "{", limits_).error().status, 400);
}

// n answers, as vLLM's parallel sampling gives them: the first is n = 1's
// answer, the others have texts (and natural lengths) of their own, and
// the same request gives the same answers.
TEST_F(SimRequestTest, NAnswersEachWithItsOwnTextTheFirstAsForOne) {
  const auto one = chat(R"("max_tokens":40,"seed":7)");
  const auto four = chat(R"("max_tokens":40,"seed":7,"n":4)");
  ASSERT_TRUE(one);
  ASSERT_TRUE(four) << four.error().message;
  ASSERT_EQ(one->answers.size(), 1u);
  ASSERT_EQ(four->answers.size(), 4u);
  EXPECT_EQ(four->answers[0].text_seed, one->answers[0].text_seed);
  EXPECT_EQ(four->answers[0].output_tokens, one->answers[0].output_tokens);
  std::set<std::uint64_t> seeds;
  for (const SimAnswer& a : four->answers) {
    seeds.insert(a.text_seed);
    EXPECT_GE(a.output_tokens, 1u);
    EXPECT_LE(a.output_tokens, 40u);
    EXPECT_EQ(a.finish_length, a.output_tokens == 40u);
  }
  EXPECT_EQ(seeds.size(), 4u);
  const auto again = chat(R"("max_tokens":40,"seed":7,"n":4)");
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(again->answers[i].text_seed, four->answers[i].text_seed);
    EXPECT_EQ(again->answers[i].output_tokens, four->answers[i].output_tokens);
  }
  // Natural lengths differ between answers (mean 20 under a cap of 40).
  const auto many = chat(R"("max_tokens":40,"n":32)");
  ASSERT_TRUE(many);
  std::set<std::uint32_t> lengths;
  for (const SimAnswer& a : many->answers) lengths.insert(a.output_tokens);
  EXPECT_GT(lengths.size(), 4u);
}

TEST_F(SimRequestTest, StreamOptions) {
  const auto r = chat(R"("stream":true,"stream_options":{"include_usage":true})");
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->stream);
  EXPECT_TRUE(r->include_usage);
  EXPECT_FALSE(chat(R"("stream_options":{"include_usage":true})")->include_usage);
}

}  // namespace
}  // namespace arbiter::sim
