#include "core/request_parser.hpp"

#include <boost/json.hpp>
#include <gtest/gtest.h>

namespace arbiter {
namespace {

ParsedRequest parse_ok(Route route, std::string_view body) {
  auto r = parse_request(route, body);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return r ? std::move(*r) : ParsedRequest{};
}

ApiError parse_err(Route route, std::string_view body) {
  auto r = parse_request(route, body);
  EXPECT_FALSE(r);
  return r ? ApiError{} : r.error();
}

TEST(RequestParser, ExtractsChatFields) {
  const auto p = parse_ok(Route::kChatCompletions,
                          R"({"model":"m","stream":true,"stream_options":{"include_usage":true},
                              "max_tokens":50,"messages":[{"role":"system","content":"12345678"},
                              {"role":"user","content":[{"type":"text","text":"abcd"},{"type":"image_url"}]}]})");
  EXPECT_EQ(p.info.model, "m");
  EXPECT_TRUE(p.info.stream);
  EXPECT_TRUE(p.info.include_usage);
  EXPECT_EQ(p.info.max_tokens, 50);
  // 2 messages x 4 overhead + 8/4 + 4/4 tokens of text.
  EXPECT_EQ(p.info.prompt_tokens_estimate, 2 * 4 + 2 + 1);
}

TEST(RequestParser, MaxCompletionTokensWinsForChat) {
  const auto p = parse_ok(Route::kChatCompletions,
                          R"({"model":"m","max_tokens":10,"max_completion_tokens":20,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(p.info.max_tokens, 20);
}

TEST(RequestParser, CompletionPromptForms) {
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"abcdefghi"})").info.prompt_tokens_estimate, 3);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":["abcd","abcd"]})").info.prompt_tokens_estimate, 2);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":[1,2,3]})").info.prompt_tokens_estimate, 3);
  EXPECT_EQ(parse_ok(Route::kCompletions, R"({"model":"m","prompt":[[1,2],[3]]})").info.prompt_tokens_estimate, 3);
  EXPECT_FALSE(parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x"})").info.stream);
}

TEST(RequestParser, RejectsBadBodiesWithTheFieldNamed) {
  EXPECT_EQ(parse_err(Route::kChatCompletions, "{not json").code, ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_err(Route::kChatCompletions, "[1,2]").code, ErrorCode::kInvalidJson);
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"messages":[{"role":"user","content":"x"}]})").param, "model");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"","messages":[{"role":"user","content":"x"}]})").param, "model");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m"})").param, "messages");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m","messages":[]})").param, "messages");
  EXPECT_EQ(parse_err(Route::kChatCompletions, R"({"model":"m","messages":[1]})").param, "messages");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m"})").param, "prompt");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":5})").param, "prompt");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","stream":"yes"})").param, "stream");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":0})").param, "max_tokens");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":"9"})").param, "max_tokens");
  EXPECT_EQ(parse_err(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":1.5})").code,
            ErrorCode::kInvalidRequest);
}

TEST(MaxTokensCap, RewritesWhenAboveOrAbsentOnly) {
  auto above = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":1000})");
  EXPECT_TRUE(apply_max_tokens_cap(above, 128));
  EXPECT_EQ(above.body.at("max_tokens").as_int64(), 128);
  EXPECT_EQ(above.info.max_tokens, 128);

  auto absent = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x"})");
  EXPECT_TRUE(apply_max_tokens_cap(absent, 128));
  EXPECT_EQ(absent.body.at("max_tokens").as_int64(), 128);

  auto below = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":16})");
  EXPECT_FALSE(apply_max_tokens_cap(below, 128));
  EXPECT_EQ(below.body.at("max_tokens").as_int64(), 16);

  auto nulled = parse_ok(Route::kCompletions, R"({"model":"m","prompt":"x","max_tokens":null})");
  EXPECT_TRUE(apply_max_tokens_cap(nulled, 128));
  EXPECT_EQ(nulled.body.at("max_tokens").as_int64(), 128);
}

TEST(MaxTokensCap, CapsTheFieldTheChatClientUsed) {
  auto p = parse_ok(Route::kChatCompletions,
                    R"({"model":"m","max_completion_tokens":500,"messages":[{"role":"user","content":"x"}]})");
  EXPECT_TRUE(apply_max_tokens_cap(p, 100));
  EXPECT_EQ(p.body.at("max_completion_tokens").as_int64(), 100);
  EXPECT_FALSE(p.body.contains("max_tokens"));
  // Every other field survives the rewrite untouched.
  auto q = parse_ok(Route::kChatCompletions,
                    R"({"model":"m","temperature":0.5,"messages":[{"role":"user","content":"x"}]})");
  apply_max_tokens_cap(q, 100);
  EXPECT_EQ(q.body.at("temperature").as_double(), 0.5);
  EXPECT_EQ(q.body.at("messages").as_array().size(), 1u);
}

}  // namespace
}  // namespace arbiter
