// Shadow comparison: an answer's text, tokens and wholeness from a whole
// JSON answer or an SSE stream; the tally's errors, percentiles and exact
// matches.
#include <gtest/gtest.h>

#include "core/rollout/shadow_compare.hpp"

namespace arbiter::rollout {
namespace {

TEST(ShadowCompare, SummarizesWholeAnswersAndStreams) {
  const AnswerSummary chat = summarize_answer(
      R"({"choices":[{"message":{"role":"assistant","content":"Hello there"}}],"usage":{"completion_tokens":2}})",
      false, 200, 12.5);
  EXPECT_TRUE(chat.ok);
  EXPECT_EQ(chat.text, "Hello there");
  EXPECT_EQ(chat.output_tokens, 2);
  EXPECT_EQ(chat.latency_ms, 12.5);
  const AnswerSummary completion = summarize_answer(R"({"choices":[{"text":"abc"}]})", false, 200, 1);
  EXPECT_TRUE(completion.ok);
  EXPECT_EQ(completion.text, "abc");
  EXPECT_FALSE(completion.output_tokens);

  const std::string stream =
      "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n"
      "data: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"completion_tokens\":2}}\n\n"
      "data: [DONE]\n\n";
  const AnswerSummary streamed = summarize_answer(stream, true, 200, 3);
  EXPECT_TRUE(streamed.ok);
  EXPECT_EQ(streamed.text, "Hello");
  EXPECT_EQ(streamed.output_tokens, 2);
  // Without [DONE] a stream is not whole; an error event makes it an error.
  EXPECT_FALSE(summarize_answer(stream.substr(0, stream.find("data: [DONE]")), true, 200, 3).ok);
  EXPECT_FALSE(summarize_answer("data: {\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n", true, 200, 3).ok);
  EXPECT_FALSE(summarize_answer(R"({"choices":[]})", false, 503, 3).ok);
  EXPECT_FALSE(summarize_answer("not json", false, 200, 3).ok);
}

TEST(ShadowCompare, TheTallyCountsErrorsLatenciesAndExactMatches) {
  ShadowTally tally;
  for (int i = 0; i < 100; ++i) {
    const AnswerSummary primary{.ok = true, .latency_ms = 10.0 + i, .output_tokens = 10, .text = "same"};
    const AnswerSummary shadow{.ok = i % 10 != 0, .latency_ms = 20.0 + 2 * i, .output_tokens = 12,
                               .text = i % 4 == 0 ? "other" : "same"};
    tally.add(primary, shadow, i % 2 == 0);
  }
  const ShadowReport r = tally.report();
  EXPECT_EQ(r.pairs, 100u);
  EXPECT_EQ(r.primary_errors, 0u);
  EXPECT_EQ(r.shadow_errors, 10u);
  EXPECT_NEAR(*r.primary_p50_ms, 60, 1);
  EXPECT_NEAR(*r.shadow_p99_ms, 218, 2);
  EXPECT_EQ(r.primary_mean_tokens, 10);
  EXPECT_EQ(r.shadow_mean_tokens, 12);
  EXPECT_FALSE(ShadowTally().report().primary_mean_tokens);  // none without pairs
  // Deterministic: the even ones (50), less those whose shadow failed
  // (multiples of 10: 10 of them) = 40; of those, multiples of 4 differ.
  EXPECT_EQ(r.deterministic_pairs, 40u);
  uint64_t same = 0;
  for (int i = 0; i < 100; i += 2) same += (i % 10 != 0 && i % 4 != 0) ? 1 : 0;
  EXPECT_EQ(r.exact_matches, same);
}

}  // namespace
}  // namespace arbiter::rollout
