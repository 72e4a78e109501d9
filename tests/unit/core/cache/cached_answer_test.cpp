// An answer kept and written again, whole or streamed, whichever shape
// filled it (core/cache/cached_answer.hpp).
#include "core/cache/cached_answer.hpp"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "core/sse.hpp"

namespace arbiter::cache {
namespace {

namespace json = boost::json;

const std::string kWholeChat =
    R"({"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,)"
    R"("message":{"role":"assistant","content":"Hello \"you\"\n","tool_calls":[],"reasoning_content":null},)"
    R"("logprobs":null,"finish_reason":"stop","stop_reason":null}],)"
    R"("usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8}})";

std::string chunk(std::string_view choice) {
  return R"(data: {"id":"chatcmpl-2","object":"chat.completion.chunk","created":1,"model":"m","choices":[)" +
         std::string(choice) + "]}\n\n";
}

std::string stream_chat() {
  return chunk(R"({"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null})") +
         chunk(R"({"index":0,"delta":{"content":"Hello \"you\""},"logprobs":null,"finish_reason":null})") +
         chunk(R"({"index":0,"delta":{"content":"\n"},"logprobs":null,"finish_reason":"stop"})") +
         "data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
         "\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8}}\n\n"
         "data: [DONE]\n\n";
}

TEST(CachedAnswer, ReadsAWholeChatAnswer) {
  const auto a = answer_from_whole(Route::kChatCompletions, kWholeChat);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->content, "Hello \"you\"\n");
  EXPECT_EQ(a->finish_reason, "stop");
  ASSERT_TRUE(a->usage);
  EXPECT_EQ(a->usage->prompt_tokens, 5);
  EXPECT_EQ(a->usage->completion_tokens, 3);
}

TEST(CachedAnswer, AStreamAndAWholeAnswerReadTheSame) {
  const auto whole = answer_from_whole(Route::kChatCompletions, kWholeChat);
  const auto streamed = answer_from_stream(Route::kChatCompletions, stream_chat());
  ASSERT_TRUE(whole && streamed);
  EXPECT_EQ(streamed->content, whole->content);
  EXPECT_EQ(streamed->finish_reason, whole->finish_reason);
  ASSERT_TRUE(streamed->usage);
  EXPECT_EQ(streamed->usage->completion_tokens, 3);
}

TEST(CachedAnswer, AStoredAnswerIsReadFromItsBytesWithTheEnginesUsageWhereTheClientHadNone) {
  std::string hidden_usage = stream_chat();
  hidden_usage.erase(hidden_usage.find("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,"
                                       "\"model\":\"m\",\"choices\":[],"),
                     std::string_view("data: {\"id\":\"chatcmpl-2\",\"object\":\"chat.completion.chunk\",\"created\":1,"
                                      "\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,"
                                      "\"total_tokens\":8}}\n\n").size());
  const StoredAnswer stored{.stream = true, .raw = hidden_usage, .usage = Usage{.prompt_tokens = 5, .completion_tokens = 3}};
  const auto a = read_answer(stored);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->content, "Hello \"you\"\n");
  ASSERT_TRUE(a->usage);
  EXPECT_EQ(a->usage->completion_tokens, 3);
  EXPECT_FALSE(read_answer(StoredAnswer{.raw = "{\"choices\":[]}"}));
  const StoredAnswer read{.answer = CachedAnswer{.content = "x", .finish_reason = "stop"}};
  EXPECT_EQ(read_answer(read)->content, "x");  // already read: as it is
}

TEST(CachedAnswer, AKeptAnswerIsWrittenFromItsEscapedTextsAlike) {
  const auto plain = answer_from_whole(Route::kChatCompletions, kWholeChat);
  const auto kept = read_answer(StoredAnswer{.raw = kWholeChat});
  ASSERT_TRUE(plain && kept);
  EXPECT_TRUE(plain->content_json.empty());
  EXPECT_EQ(kept->content_json, R"(Hello \"you\"\n)");
  EXPECT_EQ(render_whole(*kept, "c", 1, "m"), render_whole(*plain, "c", 1, "m"));
  EXPECT_EQ(render_stream(*kept, "c", 1, "m", true), render_stream(*plain, "c", 1, "m", true));
}

TEST(CachedAnswer, AnEmbeddingIsKeptAndWrittenAsItCame) {
  const std::string body =
      R"({"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.6,0.8]}],"model":"e",)"
      R"("usage":{"prompt_tokens":2,"total_tokens":2}})";
  const auto a = read_answer(StoredAnswer{.route = Route::kEmbeddings, .raw = body});
  ASSERT_TRUE(a);
  EXPECT_EQ(render_whole(*a, "ignored", 1, "e"), body);
  EXPECT_FALSE(read_answer(StoredAnswer{.route = Route::kEmbeddings, .raw = R"({"object":"list","data":[]})"}));
}

TEST(CachedAnswer, RefusesWhatAReplayWouldLose) {
  const auto refused = [](std::string_view whole) { return !answer_from_whole(Route::kChatCompletions, whole); };
  EXPECT_TRUE(refused(R"({"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c"}]},"finish_reason":"tool_calls"}]})"));
  EXPECT_TRUE(refused(R"({"choices":[{"index":0,"message":{"role":"assistant","content":"a"},"logprobs":{"content":[]},"finish_reason":"stop"}]})"));
  EXPECT_TRUE(refused(R"({"choices":[{"index":0,"message":{"content":"a"},"finish_reason":"stop"},{"index":1,"message":{"content":"b"},"finish_reason":"stop"}]})"));
  EXPECT_TRUE(refused(R"({"choices":[{"index":0,"message":{"content":"a"},"finish_reason":null}]})"));
  EXPECT_TRUE(refused(R"({"error":{"message":"x"}})"));
  EXPECT_TRUE(refused("not json"));
  // A stream cut before its end, one that carried an error, a tool call.
  std::string s = stream_chat();
  EXPECT_FALSE(answer_from_stream(Route::kChatCompletions, s.substr(0, s.size() - 16)));
  EXPECT_FALSE(answer_from_stream(Route::kChatCompletions, s.substr(0, s.size() - 3)));
  EXPECT_FALSE(answer_from_stream(Route::kChatCompletions,
                                  chunk(R"({"index":0,"delta":{"content":"a"},"finish_reason":null})") +
                                      "event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\ndata: [DONE]\n\n"));
  EXPECT_FALSE(answer_from_stream(
      Route::kChatCompletions,
      chunk(R"({"index":0,"delta":{"tool_calls":[{"index":0,"id":"c"}]},"finish_reason":"tool_calls"})") +
          "data: [DONE]\n\n"));
}

TEST(CachedAnswer, RendersAWholeAnswerInTheFreshShape) {
  auto a = *answer_from_stream(Route::kChatCompletions, stream_chat());
  const json::value v = json::parse(render_whole(a, "chatcmpl-x", 42, "m"));
  const json::value fresh = json::parse(kWholeChat);
  EXPECT_EQ(v.at("object"), fresh.at("object"));
  EXPECT_EQ(v.at("id"), "chatcmpl-x");
  EXPECT_EQ(v.at("created"), 42);
  EXPECT_EQ(v.at("choices").at(0).at("message").at("content"), fresh.at("choices").at(0).at("message").at("content"));
  EXPECT_EQ(v.at("choices").at(0).at("finish_reason"), "stop");
  EXPECT_EQ(v.at("usage").at("total_tokens"), 8);
}

TEST(CachedAnswer, RendersAStreamThatReadsBackAsTheSameAnswer) {
  const auto a = *answer_from_whole(Route::kChatCompletions, kWholeChat);
  const std::string sse = render_stream(a, "chatcmpl-y", 7, "m", true);
  const auto back = answer_from_stream(Route::kChatCompletions, sse);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->content, a.content);
  EXPECT_EQ(back->finish_reason, a.finish_reason);
  ASSERT_TRUE(back->usage);
  EXPECT_EQ(back->usage->prompt_tokens, 5);
  // Every event is a chunk object of its own id, the usage chunk only when asked.
  std::size_t events = 0;
  SseFramer framer;
  framer.feed(sse, [&](std::string_view event) {
    ++events;
    if (is_done_event(event)) return;
    const json::value v = json::parse(event_data(event));
    EXPECT_EQ(v.at("object"), "chat.completion.chunk");
    EXPECT_EQ(v.at("id"), "chatcmpl-y");
    if (!v.at("choices").as_array().empty()) {
      EXPECT_TRUE(v.at("usage").is_null());  // as OpenAI's chunks
    }
  });
  EXPECT_EQ(events, 5u);  // role, content, finish, usage, [DONE]
  EXPECT_EQ(render_stream(a, "chatcmpl-y", 7, "m", false).find("\"usage\""), std::string::npos);
}

TEST(CachedAnswer, CompletionsAndReasoningRoundTrip) {
  const std::string whole =
      R"({"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":"four","logprobs":null,"finish_reason":"length"}]})";
  const auto a = answer_from_whole(Route::kCompletions, whole);
  ASSERT_TRUE(a);
  const auto back = answer_from_stream(Route::kCompletions, render_stream(*a, "cmpl-2", 1, "m", false));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->content, "four");
  EXPECT_EQ(back->finish_reason, "length");
  EXPECT_EQ(json::parse(render_whole(*a, "cmpl-3", 1, "m")).at("choices").at(0).at("text"), "four");

  CachedAnswer r{.route = Route::kChatCompletions, .content = "42", .reasoning = "think\u0001", .finish_reason = "stop"};
  const auto again = answer_from_stream(Route::kChatCompletions, render_stream(r, "c", 1, "m", true));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->reasoning, r.reasoning);
  EXPECT_FALSE(again->usage);
  EXPECT_EQ(answer_from_whole(Route::kChatCompletions, render_whole(r, "c", 1, "m"))->reasoning, r.reasoning);
}

}  // namespace
}  // namespace arbiter::cache
