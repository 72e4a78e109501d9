// The simulator's wire formats: SSE chunks and whole responses shaped like
// vLLM's, and the deterministic one-token-per-word text.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <boost/json.hpp>

#include "engine/generated_text.hpp"
#include "engine/prompt.hpp"
#include "sim/sim_text.hpp"

namespace arbiter::sim {
namespace {

namespace json = boost::json;

// The JSON of one "data: {...}\n\n" event.
json::object event_json(std::string_view event) {
  EXPECT_TRUE(event.starts_with("data: ")) << event;
  EXPECT_TRUE(event.ends_with("\n\n")) << event;
  return json::parse(event.substr(6, event.size() - 8)).as_object();
}

TEST(SimText, WordsAreDeterministicSingleTokens) {
  std::string text;
  for (std::uint32_t i = 0; i < 100; ++i) {
    const auto w = engine::token_word(99, i);
    EXPECT_EQ(w, engine::token_word(99, i));
    EXPECT_EQ(w.size(), engine::kCharsPerToken);
    text += w;
  }
  EXPECT_EQ(engine::count_tokens(text), 100u);
  std::string other;
  for (std::uint32_t i = 0; i < 100; ++i) other += engine::token_word(100, i);
  EXPECT_NE(text, other);
}

TEST(SimText, ChatChunksLookLikeVllms) {
  const ChunkFormatter f(Route::kChatCompletions, "chatcmpl-1", "m\"1", 1700000000, /*include_usage=*/true);
  std::string out;
  f.append_role_event(out);
  const auto role = event_json(out);
  EXPECT_EQ(role.at("id").as_string(), "chatcmpl-1");
  EXPECT_EQ(role.at("object").as_string(), "chat.completion.chunk");
  EXPECT_EQ(role.at("created").as_int64(), 1700000000);
  EXPECT_EQ(role.at("model").as_string(), "m\"1");
  EXPECT_EQ(role.at("choices").at(0).at("delta").at("role").as_string(), "assistant");
  EXPECT_TRUE(role.at("usage").is_null());

  out.clear();
  f.append_token_event(out, 0, " the", "");
  auto tok = event_json(out);
  const auto& choice = tok.at("choices").at(0).as_object();
  EXPECT_EQ(choice.at("index").as_int64(), 0);
  EXPECT_EQ(choice.at("delta").at("content").as_string(), " the");
  EXPECT_TRUE(choice.at("finish_reason").is_null());
  EXPECT_TRUE(tok.at("usage").is_null());

  out.clear();
  f.append_token_event(out, 0, " end", "length");
  EXPECT_EQ(event_json(out).at("choices").at(0).at("finish_reason").as_string(), "length");

  out.clear();
  f.append_usage_event(out, Usage{.prompt_tokens = 7, .completion_tokens = 5});
  const auto usage = event_json(out);
  EXPECT_TRUE(usage.at("choices").as_array().empty());
  EXPECT_EQ(usage.at("usage").at("prompt_tokens").as_int64(), 7);
  EXPECT_EQ(usage.at("usage").at("completion_tokens").as_int64(), 5);
  EXPECT_EQ(usage.at("usage").at("total_tokens").as_int64(), 12);
}

TEST(SimText, WithoutIncludeUsageChunksHaveNoUsageField) {
  const ChunkFormatter f(Route::kChatCompletions, "x", "m", 1, false);
  std::string out;
  f.append_token_event(out, 0, " the", "");
  EXPECT_FALSE(event_json(out).contains("usage"));
}

TEST(SimText, CompletionChunksCarryText) {
  const ChunkFormatter f(Route::kCompletions, "cmpl-1", "m", 1, false);
  std::string out;
  f.append_token_event(out, 0, " sky", "stop");
  const auto e = event_json(out);
  EXPECT_EQ(e.at("object").as_string(), "text_completion");
  EXPECT_EQ(e.at("choices").at(0).at("text").as_string(), " sky");
  EXPECT_EQ(e.at("choices").at(0).at("finish_reason").as_string(), "stop");
}

TEST(SimText, WholeResponses) {
  const Usage u{.prompt_tokens = 3, .completion_tokens = 2};
  const auto chat = json::parse(ChunkFormatter(Route::kChatCompletions, "chatcmpl-2", "m", 5, false)
                                    .whole_response({{" a b", "stop"}}, u))
                        .as_object();
  EXPECT_EQ(chat.at("object").as_string(), "chat.completion");
  EXPECT_EQ(chat.at("choices").at(0).at("message").at("role").as_string(), "assistant");
  EXPECT_EQ(chat.at("choices").at(0).at("message").at("content").as_string(), " a b");
  EXPECT_EQ(chat.at("choices").at(0).at("finish_reason").as_string(), "stop");
  EXPECT_EQ(chat.at("usage").at("total_tokens").as_int64(), 5);

  const auto cmpl =
      json::parse(ChunkFormatter(Route::kCompletions, "cmpl-2", "m", 5, false).whole_response({{" xy", "length"}}, u))
          .as_object();
  EXPECT_EQ(cmpl.at("object").as_string(), "text_completion");
  EXPECT_EQ(cmpl.at("choices").at(0).at("text").as_string(), " xy");
  EXPECT_EQ(cmpl.at("choices").at(0).at("finish_reason").as_string(), "length");
}

// A request for n answers: each event and choice carries its answer's index.
TEST(SimText, SeveralAnswersAreToldApartByIndex) {
  const ChunkFormatter f(Route::kChatCompletions, "chatcmpl-3", "m", 1, false);
  std::string out;
  f.append_role_event(out, 12);
  EXPECT_EQ(event_json(out).at("choices").at(0).at("index").as_int64(), 12);
  EXPECT_EQ(event_json(out).at("choices").at(0).at("delta").at("role").as_string(), "assistant");
  out.clear();
  f.append_token_event(out, 3, " sky", "stop");
  const auto tok = event_json(out);
  EXPECT_EQ(tok.at("choices").at(0).at("index").as_int64(), 3);
  EXPECT_EQ(tok.at("choices").at(0).at("delta").at("content").as_string(), " sky");

  const Usage u{.prompt_tokens = 3, .completion_tokens = 5};
  for (const Route route : {Route::kChatCompletions, Route::kCompletions}) {
    const auto whole =
        json::parse(ChunkFormatter(route, "id", "m", 5, false).whole_response({{" a b", "stop"}, {" c", "length"}}, u))
            .as_object();
    const auto& choices = whole.at("choices").as_array();
    ASSERT_EQ(choices.size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(choices[i].at("index").as_int64(), static_cast<std::int64_t>(i));
    const bool chat = route == Route::kChatCompletions;
    EXPECT_EQ(chat ? choices[1].at("message").at("content").as_string() : choices[1].at("text").as_string(), " c");
    EXPECT_EQ(choices[1].at("finish_reason").as_string(), "length");
    EXPECT_EQ(whole.at("usage").at("completion_tokens").as_int64(), 5);
  }
}

TEST(SimText, ResponseIdsHaveOpenAiPrefixes) {
  EXPECT_TRUE(response_id(Route::kChatCompletions, 1, 1).starts_with("chatcmpl-"));
  EXPECT_TRUE(response_id(Route::kCompletions, 1, 1).starts_with("cmpl-"));
  EXPECT_NE(response_id(Route::kCompletions, 1, 1), response_id(Route::kCompletions, 1, 2));
}

// The gateway's embedded simulators (seeds 1, 2, ...) answered their first
// requests with the same ids in both demo pools.
TEST(SimText, SimulatorsWithDifferentSeedsGiveDifferentIds) {
  std::set<std::string> ids;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    for (std::uint64_t n = 0; n < 64; ++n) ids.insert(response_id(Route::kCompletions, seed, n));
  }
  EXPECT_EQ(ids.size(), 8u * 64u);
}

}  // namespace
}  // namespace arbiter::sim
