// Asking the engine for a stream's usage on the client's behalf, and telling
// the usage chunk that adds from the events the client asked for.
#include "core/stream_usage.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "core/usage.hpp"

namespace arbiter {
namespace {

namespace json = boost::json;

// The body as it goes upstream: the ask inserted where it goes.
std::string asked_body(std::string_view body) {
  const std::size_t at = stream_usage_ask_at(body);
  return std::string(body.substr(0, at)) + std::string(kStreamUsageAsk) + std::string(body.substr(at));
}

TEST(StreamUsage, TheBodyAsksForUsageFirstAndKeepsEveryMember) {
  const std::string body = R"(  {"model":"m","stream":true,"messages":[{"role":"user","content":"{\"a\":1}"}]})";
  const json::object asked = json::parse(asked_body(body)).as_object();
  EXPECT_TRUE(asked.at("stream_options").at("include_usage").as_bool());
  const json::object original = json::parse(body).as_object();
  for (const auto& [key, value] : original) EXPECT_EQ(asked.at(key), value) << key;
  EXPECT_EQ(asked.size(), original.size() + 1);
  // First in the object: a client's own stream_options, later, is the last value.
  EXPECT_TRUE(asked_body(R"({"model":"m"})").starts_with(R"({"stream_options":{"include_usage":true},)"));
}

TEST(StreamUsage, TheDocumentAsksOnlyWhenTheClientSaidNothing) {
  json::object bare{{"model", "m"}};
  ask_stream_usage(bare);
  EXPECT_TRUE(bare.at("stream_options").at("include_usage").as_bool());
  json::object own{{"model", "m"}, {"stream_options", json::object{{"include_usage", false}}}};
  ask_stream_usage(own);
  EXPECT_FALSE(own.at("stream_options").at("include_usage").as_bool());
}

TEST(StreamUsage, OnlyTheChunkWithUsageAndNoChoicesIsTheUsageChunk) {
  // vLLM's last chunk with include_usage, and SGLang-style spacing.
  EXPECT_TRUE(is_usage_chunk(R"({"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})"));
  EXPECT_TRUE(is_usage_chunk(R"({"id": "x", "choices": [ ], "usage": {"prompt_tokens": 3}})"));
  // Every other chunk of such a stream carries "usage":null.
  EXPECT_FALSE(is_usage_chunk(R"({"id":"x","choices":[{"index":0,"delta":{"content":" hi"}}],"usage":null})"));
  // A final chunk with its choice and usage (llama.cpp server's) is content.
  EXPECT_FALSE(is_usage_chunk(R"({"choices":[{"index":0,"finish_reason":"stop","delta":{}}],"usage":{"prompt_tokens":3}})"));
  EXPECT_FALSE(is_usage_chunk(R"({"choices":[]})"));
  EXPECT_FALSE(is_usage_chunk(R"({"usage":{"prompt_tokens":3}})"));
  // Text that spells the keys is escaped inside its string: no match.
  EXPECT_FALSE(is_usage_chunk(R"({"choices":[{"delta":{"content":"\"usage\":{ \"choices\":[]"}}],"usage":null})"));
}

}  // namespace
}  // namespace arbiter
